"""The run's rollout viewer being written: ``ViewerSink``, fed each judged main attempt in input order.

Each attempt goes through ``evidence.viewer.rollout_view`` into the index; the detail files
are written as they fill (a few in flight on an object store), ``index.html`` last, so a reader who finds the page
finds every file it loads. The pages hold no run id, time or input URL: a rerun writes the same
bytes.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Self

from evidence.viewer import Chunk, ViewerIndex, rollout_view, viewer_page
from tasks.rundir import ATIF_FOLDER, REPORT_FILE, ROLLOUTS_FILE, VIEWER_FOLDER, VIEWER_PAGE, RunPaths
from tasks.storage import Location
from tasks.storage.concurrent import WriteBehind
from tasks.storage.spill import Spill
from tasks.tables.judged import JudgedAttempt

WRITES_IN_FLIGHT = 16
"""Detail files being written at once (each about 256 KiB): on an object store each is a round trip,
and with 4 in flight the 20 files of a 300-rollout run waited six round trips one after another."""
WRITE_BUDGET_BYTES = 8 * 1024 * 1024
LINKS = {"report": f"../{REPORT_FILE}", "rollouts": f"../{ROLLOUTS_FILE}", "atif": f"../{ATIF_FOLDER}/"}
"""The run's files as the page links them, relative to ``viewer/``."""


class _SpilledRows(Spill[list[Any]]):
    """The index's rows on local disk until the page is written (``evidence.viewer.IndexRows``):
    about 400 bytes per rollout that the flow would otherwise hold to the end of the reduce."""

    def append(self, row: list[Any]) -> None:
        self.add(row)


class ViewerSink:
    """``<run_dir>/viewer/``: detail files written as ``add`` fills them (behind it on an object store), the page by ``finish``.

    Opening it removes an earlier writing's files, so no stale detail file stays beside the new page.
    The index's rows wait in a local spill, deleted when the sink closes.
    """

    def __init__(self, run_dir: Location) -> None:
        self._run_dir = run_dir
        self._folder = RunPaths(run_dir).viewer
        self._writes = WriteBehind(window=WRITES_IN_FLIGHT, remote=not self._folder.is_local, budget=WRITE_BUDGET_BYTES)
        self._start()

    def _start(self) -> None:
        self._folder.remove_tree()
        self._rows = _SpilledRows()
        self._index = ViewerIndex(rows=self._rows)
        self._names: list[str] = []

    def restart(self) -> None:
        """Remove every detail file written so far and start again: the attempts are judged again."""
        self._writes.drain()
        self._rows.close()
        self._start()

    def add(self, judged: JudgedAttempt) -> None:
        """A main attempt (the next in input order) with its view facts."""
        assert judged.view is not None, "every main attempt has view facts"
        self._write(self._index.add(rollout_view(judged.view, judged.identity, judged.verdict, judged.atif)))

    def finish(self) -> list[str]:
        """The last detail file, then ``index.html``; the names written, relative to the run directory."""
        self._write(self._index.finish())
        self._writes.drain()
        document = self._index.document()
        self._run_dir.child(VIEWER_PAGE).write_chunks(lambda: viewer_page(document, self._names, LINKS))
        return [f"{VIEWER_FOLDER}/{name}" for name in self._names] + [VIEWER_PAGE]

    def _write(self, chunk: Chunk | None) -> None:
        if chunk is not None:
            self._names.append(chunk.name)
            folder = self._folder
            self._writes.submit(lambda: folder.child(chunk.name).write_bytes(chunk.data), len(chunk.data))

    def __enter__(self) -> Self:
        self._writes.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        try:
            self._writes.__exit__(kind, error, trace)
        finally:
            self._rows.close()
