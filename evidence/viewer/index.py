"""The viewer's data: the index of every main attempt (in the page) and the detail files (loaded on demand).

The index is what the rollouts table filters and sorts: one short array per rollout, its
repeated strings (agents, statuses, verdicts, checks, gap codes, ATIF outcomes) replaced by
their position in a list of codes, so 10,000 rollouts make well under a megabyte. It goes into
``index.html`` as a JSON data block, which a browser never executes.

Each rollout's detail (turns, calls, tool calls, findings, gaps) goes into a *detail file*:
a script of a few rollouts, in input order, that hands them to the page
(``evidenceViewer.chunk(k, [...])``). The page loads one with a ``<script>`` element when a
rollout of it is opened: browsers refuse ``fetch`` of ``file://`` URLs, a script they load.
A file ends at ``CHUNK_ROLLOUTS`` rollouts or once it passes ``CHUNK_BYTES``, so opening a
rollout reads a small file however long the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from evidence.viewer.rollout import RolloutView

__all__ = ["CHUNK_BYTES", "CHUNK_ROLLOUTS", "INDEX_FIELDS", "Chunk", "IndexRows", "ViewerIndex", "chunk_name"]

CHUNK_ROLLOUTS = 64
CHUNK_BYTES = 256 * 1024

INDEX_FIELDS = (
    "line",
    "rollout_id",
    "task",
    "rollout",
    "agent",
    "status",
    "verdict",
    "checks",
    "gaps",
    "atif",
    "reward",
    "latency_ms",
    "prompt_tokens",
    "completion_tokens",
    "turns",
    "model_calls",
    "tool_calls",
    "findings",
)
"""An index row's values, in order (the page reads the order from the index itself)."""
CODED = ("agent", "status", "verdict", "atif")
"""Fields whose value is a position in ``codes[field]``."""
CODED_LISTS = ("checks", "gaps")
"""Fields whose value is a list of positions in ``codes[field]``."""


def chunk_name(number: int) -> str:
    """A detail file's name, beside ``index.html``."""
    return f"rollouts-{number:05d}.js"


@dataclass(frozen=True, slots=True)
class Chunk:
    """One detail file to write: its name (beside ``index.html``) and its bytes."""

    name: str
    data: bytes


class IndexRows(Protocol):
    """Where the index keeps its rows until the page is written: a list, or the reduce's local spill
    (a row is a few hundred bytes in memory; a run's flow must not hold one per rollout)."""

    def append(self, row: list[Any], /) -> None: ...

    def __iter__(self) -> Iterator[list[Any]]: ...


def _rows_in_memory() -> IndexRows:
    rows: list[list[Any]] = []
    return rows


@dataclass
class ViewerIndex:
    """Every main attempt's index row, gathered in input order into ``rows``; the detail files as they fill.

    ``add`` takes each rollout's view and returns a detail file once one is full; ``finish``
    returns the last; ``document`` is the index the page embeds.
    """

    chunk_rollouts: int = CHUNK_ROLLOUTS
    chunk_bytes: int = CHUNK_BYTES
    rows: IndexRows = field(default_factory=_rows_in_memory)
    count: int = 0  # rows added
    codes: dict[str, dict[Any, int]] = field(default_factory=lambda: {name: {} for name in (*CODED, *CODED_LISTS)})
    chunks: list[int] = field(default_factory=list)
    _pending: list[bytes] = field(default_factory=list)
    _pending_bytes: int = 0

    def add(self, view: RolloutView) -> Chunk | None:
        """Index one rollout (the next in input order); a full detail file, when this one filled it."""
        self.rows.append([self._encoded(name, view.entry[name]) for name in INDEX_FIELDS])
        self.count += 1
        if not self._pending:
            self.chunks.append(self.count - 1)
        detail = view.detail
        self._pending.append(detail)
        self._pending_bytes += len(detail)
        if len(self._pending) >= self.chunk_rollouts or self._pending_bytes >= self.chunk_bytes:
            return self._flush()
        return None

    def finish(self) -> Chunk | None:
        """The last detail file, if rollouts are waiting for one."""
        return self._flush() if self._pending else None

    def document(self) -> dict[str, Any]:
        """The index as the page reads it: field names, code lists, rows (``rows`` itself: the page
        writes them one by one), each detail file's first rollout."""
        return {
            "fields": list(INDEX_FIELDS),
            "codes": {name: list(values) for name, values in self.codes.items()},
            "rows": self.rows,
            "chunks": self.chunks,
        }

    def _encoded(self, name: str, value: Any) -> Any:
        if name in CODED:
            return self._code(name, value)
        if name in CODED_LISTS:
            return [self._code(name, item) for item in _items(value)]
        return value

    def _code(self, name: str, value: Any) -> int:
        known = self.codes[name]
        return known.setdefault(value, len(known))

    def _flush(self) -> Chunk:
        number = len(self.chunks) - 1
        data = b"evidenceViewer.chunk(%d,[" % number + b",\n".join(self._pending) + b"]);\n"
        self._pending, self._pending_bytes = [], 0
        return Chunk(chunk_name(number), data)


def _items(value: Any) -> Iterable[Any]:
    return value if isinstance(value, list) else ()
