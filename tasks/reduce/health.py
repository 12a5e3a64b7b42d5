"""The run's two health files, folded as the main rows come, on the guess that no identity repeats.

0.7.0's duplicate-identity check gives every row whose ``(stage, task, rollout)`` identity
another row shares a finding, so a row's verdict is final only once the whole run is seen.
Identities rarely repeat: each digest is folded when its row is consumed as if its identity
were its own (a ``HealthFold`` with no sizes), which gives its verdict line, the sorted
verdict file and the score mask as they stand, and the tables and the viewer judge the row at
once. At the end the identities are counted (an external sort of the spilled keys): when none
repeats, all of that stands; else the fold is done again from the spilled digests with the
counts, and the rows are judged again from ``lines`` (``HealthOutputs.finish`` says which).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

from evidence import HealthFold, RowDigest, verdict_line, verdict_order
from tasks.attempts.context import RunContext
from tasks.storage import atomic_writer
from tasks.storage.concurrent import Documents
from tasks.storage.spill import SortedSpill, Spill, count_repeats


class HealthOutputs:
    """``quality_summary.json`` and ``rollout_verdicts.jsonl``, fed each main row's digest in input order.

    ``masked`` has a byte per main row with a digest, in input order: 1 when the run's score
    mask names its verdict (a byte, not a set of positions: a run that masks most rows would
    hold a set entry of about 70 bytes per row).
    """

    def __init__(self, ctx: RunContext, stack: ExitStack) -> None:
        self._ctx = ctx
        self._stack = stack
        self._digests: Spill[RowDigest] = stack.enter_context(Spill())
        self._keys: Spill[tuple[Any, ...]] = stack.enter_context(Spill())
        self._lines: Spill[str] | None = None  # each row's verdict line once the fold is done again
        self._start({})

    def _start(self, sizes: dict[tuple[Any, ...], int]) -> None:
        self._fold = HealthFold(self._ctx.ignored_checks, sizes)
        self._sorted: SortedSpill[str] = self._stack.enter_context(SortedSpill())
        self.masked = bytearray()

    @property
    def count(self) -> int:
        """The digests folded so far: the next one's position."""
        return self._digests.count

    @property
    def verdicts(self) -> dict[str, int]:
        """Rows per verdict as they stand."""
        return self._fold.verdicts

    def summary_text(self) -> str:
        """``quality_summary.json``'s text as the fold stands (before ``finish`` counts the identities)."""
        return self._fold.summary_text()

    def add(self, digest: RowDigest) -> str:
        """Fold the next main row's digest; its verdict line, final unless its identity turns out to repeat."""
        line = self._fold_one(self._digests.count, digest)
        self._digests.add(digest)
        self._keys.add(digest.identity_key)
        return line

    def _fold_one(self, index: int, digest: RowDigest) -> str:
        reported = self._fold.add(digest)
        assert index == len(self.masked), "folded in input order"
        self.masked.append(reported.verdict in self._ctx.masked_verdicts)
        line = verdict_line(reported)
        self._sorted.add(verdict_order(reported), line)
        return line

    def finish(self, documents: Documents) -> bool:
        """Write both files; whether every verdict line ``add`` returned stands (else ``lines`` gives them)."""
        repeated = count_repeats(self._keys, _identity_order)
        if repeated:
            self._start(repeated)
            lines: Spill[str] = self._stack.enter_context(Spill())
            for index, digest in enumerate(self._digests):
                lines.add(self._fold_one(index, digest))
            self._lines = lines
        documents.put(self._ctx.paths.quality_summary, self.summary_text().encode())
        with atomic_writer(self._ctx.paths.verdicts) as out:
            for _, line in self._sorted.items():  # noqa: PERF102  # a SortedSpill, not a dict: items() is its merge
                out.write(line.encode())
        return not repeated

    def lines(self) -> Iterator[str]:
        """Each main row's verdict line in input order, as the fold done again at ``finish`` gives them."""
        assert self._lines is not None, "only after a finish that found repeated identities"
        return iter(self._lines)


def _identity_order(key: tuple[Any, ...]) -> tuple[tuple[int, Any], ...]:
    """Sortable and equal exactly when the identities are: None, then ints, then strings."""
    return tuple((0, 0) if part is None else (1, part) if isinstance(part, int) else (2, part) for part in key)
