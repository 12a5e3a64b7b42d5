"""Fan-out progress: a Prefect progress artifact, plus local listeners (the CLI's progress bar)."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast
from uuid import UUID

from prefect.artifacts import create_progress_artifact, update_progress_artifact

from tasks.publish.links import job_artifact_key

Listener = Callable[[int, int], None]
_listeners: list[Listener] = []


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
