"""The run's analysis outputs (``tables/`` and ``viewer/``) written by the reduce, from the facts in the parts.

Each attempt's part carries what its row gives the tables and the viewer (``RowFacts``,
``ViewFacts``, made where the row was decoded), so the reduce never reads a row again. The
reduce hands each attempt here as it consumes it: the child rows go straight to their tables,
and the attempt is judged with what the run knows then (its verdict line, 0.7.0's ATIF
acceptance, its manifest entry), its ``rollouts`` row, findings and viewer page written in
manifest order. What it needs to be judged again, should the end of the run change that,
waits in a local spill.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import orjson

from evidence import AttemptEntry, AttemptOutcome
from evidence.tables import NO_ATIF, RowFacts, atif_columns, row_facts
from evidence.viewer import ViewFacts
from tasks.attempts.context import RunContext
from tasks.discover.refs import AttemptRef
from tasks.storage.spill import Spill
from tasks.tables.judged import JudgedAttempt, identity_of
from tasks.tables.sink import TableSink, TablesSummary
from tasks.tables.viewer import ViewerSink


@dataclass(frozen=True, slots=True)
class _Waiting:
    """An attempt read from its part, kept in case the run judges it again at its end.

    ``atif`` is a main row's (file, refusal) as its acceptance decided (None for a sidecar
    row); ``verdict`` its health verdict line as it stood when consumed (None without one).
    """

    output_line: int
    size: int
    facts: RowFacts
    view: bytes | None  # ViewFacts.encode(): moved as bytes, decoded once judged
    atif: tuple[str | None, str | None] | None
    verdict: str | None


class RunAnalysis:
    """The reduce's tables and viewer: attempts in manifest order (main rows, then sidecar rows), then ``finish``.

    Each attempt is judged as it comes, with what the run knows of it then (its manifest entry,
    its verdict line, its ATIF decision), and its ``rollouts`` row, findings and viewer page are
    written at once. What only the whole run settles (an identity or a rollout id that another
    attempt shares, an all-or-nothing export that publishes nothing) rarely changes anything;
    when it does, ``finish`` judges every attempt again from what ``add`` kept.
    """

    def __init__(self, ctx: RunContext, stack: ExitStack) -> None:
        self.seconds = 0.0  # spent here: the reduce's share of what the tables and the viewer cost a run
        self._ctx = ctx
        self._shard_files = [shard.name for shard in ctx.shards]
        self._tables = stack.enter_context(TableSink())
        self._viewer = stack.enter_context(ViewerSink(ctx.run_dir))
        self._waiting: Spill[_Waiting] = stack.enter_context(Spill())

    def add(
        self,
        attempt: AttemptRef,
        outcome: AttemptOutcome,
        entry: Mapping[str, Any],
        atif: tuple[str | None, str | None] | None = None,
        verdict: str | None = None,
    ) -> None:
        """One attempt from its part, with its manifest entry; a main row's ATIF decision (file, refusal) and verdict line."""
        started = time.perf_counter()
        facts = outcome.facts if outcome.facts is not None else row_facts(None)
        self._tables.add_children((self._ctx.job_id, self._ctx.run_id, attempt.key, attempt.source), facts)
        main = outcome.main
        waiting = _Waiting(
            attempt.out_line,
            len(outcome.line),
            RowFacts(facts.values, [], [], [], []),
            main.view if main is not None else None,
            atif,
            verdict,
        )
        self._waiting.add(waiting)
        self._judge(entry, waiting, verdict, atif_published=True)
        self.seconds += time.perf_counter() - started

    def _judge(self, entry: Mapping[str, Any], waiting: _Waiting, verdict_line: str | None, atif_published: bool) -> None:
        """An attempt's ``rollouts`` row, findings and (a main row's) viewer page."""
        identity = identity_of(
            AttemptEntry.model_validate(entry), self._ctx.job_id, self._ctx.run_id, self._shard_files, waiting.output_line, waiting.size
        )
        verdict = orjson.loads(verdict_line) if verdict_line is not None else None
        atif: tuple[str | None, str | None, str | None]
        if waiting.atif is None:
            atif = NO_ATIF
        else:
            file, refusal = waiting.atif
            atif = atif_columns(file if atif_published else None, refusal)
        view = ViewFacts.decode(waiting.view) if waiting.view is not None else None
        judged = JudgedAttempt(identity, waiting.facts, view, verdict, atif)
        self._tables.add_judged(judged)
        if judged.view is not None:
            self._viewer.add(judged)

    def finish(
        self, entries: Iterable[dict[str, Any]] | None = None, verdict_lines: Iterable[str] | None = None, atif_published: bool = True
    ) -> TablesSummary:
        """Publish the tables and the viewer's page, every attempt judged again first when ``entries`` are given.

        Args:
            entries: the manifest's attempt entries as the whole run has them, in the order the
                attempts were added; None when every attempt stands as it was judged.
            verdict_lines: health's verdict line of each judged main row, in input order, when
                they changed since (None: as they were when added).
            atif_published: False when an all-or-nothing export published no file (every
                accepted row is then withheld).
        """
        started = time.perf_counter()
        if entries is not None:
            self._tables.restart_judged()
            self._viewer.restart()
            verdicts = iter(verdict_lines) if verdict_lines is not None else None
            for entry, waiting in zip(entries, self._waiting, strict=True):
                verdict = waiting.verdict if verdicts is None or waiting.verdict is None else next(verdicts)
                self._judge(entry, waiting, verdict, atif_published)
        self._viewer.finish()
        summary = self._tables.publish(self._ctx.paths.tables)
        self.seconds += time.perf_counter() - started
        return summary
