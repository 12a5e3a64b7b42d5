"""The run's analysis outputs (``tables/`` and ``viewer/``) written by the reduce, from the facts in the parts.

Each attempt's part carries what its row gives the tables and the viewer (``RowFacts``,
``ViewFacts``, made where the row was decoded), so the reduce never reads a row again. Its
passes over the parts hand each attempt here: the child rows go straight to their tables, the
rest waits in a local spill until the run has judged every row (the health fold's verdicts,
0.7.0's ATIF acceptance, the manifest's notes on shared rollout ids), then ``finish`` writes
each attempt's ``rollouts`` row, findings and viewer page in manifest order.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
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
    """An attempt read from its part, waiting for the run's judgement.

    ``atif`` is a main row's (file, refusal) as its acceptance decided (None for a sidecar
    row); ``judged`` says whether health has a verdict line for it.
    """

    output_line: int
    size: int
    facts: RowFacts
    view: bytes | None  # ViewFacts.encode(): moved as bytes, decoded once in ``finish``
    atif: tuple[str | None, str | None] | None
    judged: bool


class RunAnalysis:
    """The reduce's tables and viewer: attempts in manifest order (main rows, then sidecar rows), then ``finish``."""

    def __init__(self, ctx: RunContext, stack: ExitStack) -> None:
        self.seconds = 0.0  # spent here: the reduce's share of what the tables and the viewer cost a run
        self._ctx = ctx
        self._tables = stack.enter_context(TableSink())
        self._viewer = stack.enter_context(ViewerSink(ctx.run_dir))
        self._waiting: Spill[_Waiting] = stack.enter_context(Spill())

    def add(self, attempt: AttemptRef, outcome: AttemptOutcome, atif: tuple[str | None, str | None] | None = None) -> None:
        """One attempt from its part; ``atif``: a main row's ATIF decision (file, refusal)."""
        started = time.perf_counter()
        facts = outcome.facts if outcome.facts is not None else row_facts(None)
        self._tables.add_children((self._ctx.job_id, self._ctx.run_id, attempt.key, attempt.source), facts)
        main = outcome.main
        self._waiting.add(
            _Waiting(
                attempt.out_line,
                len(outcome.line),
                RowFacts(facts.values, [], [], [], []),
                main.view if main is not None else None,
                atif,
                main is not None and main.health is not None,
            )
        )
        self.seconds += time.perf_counter() - started

    def finish(self, entries: Iterable[dict[str, Any]], verdict_lines: Iterable[str], atif_published: bool) -> TablesSummary:
        """Write every attempt's rollouts row, findings and viewer page, publish the tables and the viewer's page.

        Args:
            entries: the manifest's attempt entries, in the order the attempts were added.
            verdict_lines: health's verdict line of each judged main row, in input order.
            atif_published: False when an all-or-nothing export published no file (every
                accepted row is then withheld).
        """
        started = time.perf_counter()
        shard_files = [shard.name for shard in self._ctx.shards]
        verdicts = iter(verdict_lines)
        for entry, waiting in zip(entries, self._waiting, strict=True):
            identity = identity_of(
                AttemptEntry.model_validate(entry), self._ctx.job_id, self._ctx.run_id, shard_files, waiting.output_line, waiting.size
            )
            verdict = orjson.loads(next(verdicts)) if waiting.judged else None
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
        self._viewer.finish()
        summary = self._tables.publish(self._ctx.paths.tables)
        self.seconds += time.perf_counter() - started
        return summary
