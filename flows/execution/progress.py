"""Fan-out progress: a Prefect progress artifact, plus local listeners (the CLI's progress bar)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast
from uuid import UUID

from prefect.artifacts import create_progress_artifact, update_progress_artifact

from tasks.inputs.shards import Shard
from tasks.publish.links import job_artifact_key
from tasks.storage import release_view

Listener = Callable[[int, int], None]
_listeners: list[Listener] = []


COUNT_BLOCK = 2**24
"""Bytes of a mapped file whose newlines are counted at once (a copy of the map's block: memory stays bounded)."""


def expected_attempts(shards: Sequence[Shard]) -> int | None:
    """The attempts of a local job before discovery: the lines of its rollouts files and failures
    sidecars (None on an object store, where counting would be a second read of every file).

    The progress bar showed ``0/?`` until discovery had scanned and fingerprinted every row, half
    of a 3,180-attempt run; newlines are counted at memory speed. A blank or unreadable line
    makes the count a little high until the fan-out starts and gives the exact total.
    """
    files = [f for shard in shards for f in (shard.main, shard.failures) if f is not None]
    if not all(f.is_local for f in files):
        return None
    total = 0
    for location in files:
        if not location.is_file():  # a failures sidecar named but not written yet
            continue
        view = location.read_view()
        total += sum(bytes(view[at : at + COUNT_BLOCK]).count(b"\n") for at in range(0, len(view), COUNT_BLOCK))
        total += bool(view) and view[-1:] != b"\n"  # a last line without its newline
        release_view(view)
    return total


def add_listener(listener: Listener) -> None:
    """Call ``listener(done, total)`` whenever a group finishes (in this process)."""
    _listeners.append(listener)


def remove_listener(listener: Listener) -> None:
    _listeners.remove(listener)


class Progress:
    """Counts finished attempts and reports them to the flow run and to local listeners.

    ``published=False`` keeps it off the flow run: a pass over a followed job's rows, which the
    follow's own progress already counts (a progress artifact per snapshot piled up in the UI).
    """

    def __init__(self, total: int, job_id: str, *, published: bool = True) -> None:
        self.total = total
        self.done = 0
        self._artifact: UUID | None = None
        if published:
            key = job_artifact_key("evidence-stage-progress", job_id)
            # Prefect's async_dispatch: typed as the id or its coroutine; the id in synchronous code.
            artifact = create_progress_artifact(progress=0.0, key=key, description=f"Attempts processed (%) of job {job_id}")
            self._artifact = cast(UUID, artifact)
        self._notify()

    def advance(self, count: int) -> None:
        self.done += count
        if self._artifact is not None:
            update_progress_artifact(artifact_id=self._artifact, progress=100.0 * self.done / max(self.total, 1))
        self._notify()

    def _notify(self) -> None:
        for listener in tuple(_listeners):  # a copy: a listener may be removed meanwhile
            listener(self.done, self.total)
