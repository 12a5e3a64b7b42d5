"""The reduce: per-attempt parts -> the run's outputs, streaming in input order.

Parts are read once each (with bounded read-ahead) and each output is written atomically. The
one pass over the main parts writes ``rollouts.jsonl`` and spills every per-attempt record a
fold needs (health digests, perf records, capability digests, accepted ATIF files) to local
temporary files; each fold then streams its spill. Memory holds only the folds' own state:
counters, the identities seen (duplicates, the ATIF first-wins rule, an all-or-nothing run's batch keys) and one sort buffer for the
verdict lines, so it does not grow by kilobytes per attempt (README, guarantee 6).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from evidence import (
    AttemptOutcome,
    AttemptPart,
    HealthFold,
    PerfDigest,
    PerfSummaryFold,
    RowDigest,
    build_capabilities,
    dumps,
    histogram_values,
    key_metrics,
    reward_values,
    verdict_line,
    verdict_order,
)
from tasks.attempts.context import RunContext
from tasks.attempts.parts import read_parts, segment_folder
from tasks.discover.refs import FAILURES, MAIN, AttemptRef
from tasks.reduce.analysis import RunAnalysis
from tasks.reduce.atif_outputs import AtifOutputs, write_atif
from tasks.reduce.attempt_log import AttemptLog
from tasks.reduce.scores import NO_HEALTH, write_scores
from tasks.storage import Location, atomic_writer
from tasks.storage.concurrent import Documents
from tasks.storage.lines import FilePlace, LineWriter
from tasks.storage.spill import SortedSpill, Spill, count_repeats


@dataclass(slots=True)
class ReduceSummary:
    """Counts the run manifest and the CLI report, and the manifest's attempt entries."""

    log: AttemptLog  # every attempt's manifest entry; the caller closes it after publishing
    rows: dict[str, int] = field(default_factory=dict)
    atif_files: int = 0
    atif_rejections: int = 0
    atif_published: bool = True
    verdicts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    tables_seconds: float = 0.0  # of ``seconds``: writing tables/ and viewer/ (RunAnalysis)
    histograms: dict[str, list[float]] = field(default_factory=dict)  # latency_ms, tokens_per_turn, reward
    scores: dict[str, Any] = field(default_factory=dict)  # evidence.key_metrics of scores.json (the flow's result, the CLI summary)
    fold_problems: list[str] = field(default_factory=list)  # values no fold could use, and missing digests


def _parts(ctx: RunContext, attempts: Iterable[AttemptRef]) -> Iterator[tuple[AttemptRef, AttemptPart, FilePlace | None]]:
    """The current part of each attempt and where its line lies locally, in input order
    (segments read ahead; one index per shard's source folder)."""
    for folder, run in itertools.groupby(attempts, key=_part_folder):
        yield from read_parts(segment_folder(ctx.run_dir, folder), run)


def _part_folder(attempt: AttemptRef) -> str:
    return attempt.part_folder


def _rows_writer(stack: ExitStack, target: Location) -> LineWriter:
    """Where one source's output lines go; they are all written, and the file appears, when ``stack`` closes.

    Locally the lines' bytes are copied beside the flow (``LineWriter``) while the reduce goes on
    with its folds: the reduce's stack closes last, after every other output is written.
    """
    return stack.enter_context(LineWriter(stack.enter_context(atomic_writer(target))))


def _write_rows(
    ctx: RunContext, attempts: Iterable[AttemptRef], lines: LineWriter, log: AttemptLog, add: Callable[[AttemptRef, AttemptOutcome], None]
) -> int:
    """One streaming pass over a source's parts: its output lines, each attempt's manifest entry,
    and each outcome to ``add`` (the main rows' folds, or the tables for sidecar rows); the row count."""
    count = 0
    for attempt, part, place in _parts(ctx, attempts):
        lines.write(part.outcome.line, place)
        log.add(attempt, part)
        add(attempt, part.outcome)
        count += 1
    return count


def _of_source(attempts: Iterable[AttemptRef], source: str) -> Iterator[AttemptRef]:
    return (attempt for attempt in attempts if attempt.source == source)


@dataclass(slots=True)
class _MainFold:
    """Where the main pass puts each attempt's digests: spills, the ATIF decisions, and what is missing."""

    health: Spill  # RowDigest, input order
    perf: Spill  # PerfDigest, input order
    capabilities: Spill
    scores: Spill  # (health index or NO_HEALTH, ScoreDigest), input order; rows in no group have none
    atif: AtifOutputs
    analysis: RunAnalysis
    unavailable: Counter[str] = field(default_factory=Counter)  # digest name -> rows without it

    @classmethod
    def open(cls, stack: ExitStack, atif: AtifOutputs, analysis: RunAnalysis) -> _MainFold:
        """Empty spills, deleted when ``stack`` closes."""

        def spill() -> Spill:
            return stack.enter_context(Spill())

        return cls(spill(), spill(), spill(), spill(), atif, analysis)

    def add(self, attempt: AttemptRef, outcome: AttemptOutcome) -> None:
        digests = outcome.main
        assert digests is not None, "a main attempt always has digests"
        if digests.score is not None:
            self.scores.add((self.health.count if digests.health is not None else NO_HEALTH, digests.score))
        for name, digest, spill in (
            ("health", digests.health, self.health),
            ("perf", digests.perf, self.perf),
            ("capabilities", digests.capability, self.capabilities),
        ):
            if digest is None:
                self.unavailable[name] += 1
            else:
                spill.add(digest)
        self.analysis.add(attempt, outcome, self.atif.decide(attempt, outcome, digests.atif))


def write_health(ctx: RunContext, spill: Spill[RowDigest], masked: set[int], judged: Spill[str], documents: Documents) -> dict[str, int]:
    """Both health files from the spilled digests: count identities, fold, sort the verdict lines.

    Adds to ``masked`` the position of every digest whose verdict the run's score mask names,
    and to ``judged`` each digest's verdict line, in input order.
    """
    repeated = count_repeats((digest.identity_key for digest in spill), _identity_order)
    fold = HealthFold(ctx.ignored_checks, repeated)
    with SortedSpill[str]() as lines:
        for index, digest in enumerate(spill):
            reported = fold.add(digest)
            if reported.verdict in ctx.masked_verdicts:
                masked.add(index)
            line = verdict_line(reported)
            judged.add(line)
            lines.add(verdict_order(reported), line)
        documents.put(ctx.paths.quality_summary, fold.summary_text().encode())
        with atomic_writer(ctx.paths.verdicts) as out:
            for _, line in lines.items():  # noqa: PERF102  # a SortedSpill, not a dict: items() is its merge
                out.write(line.encode())
    return fold.verdicts


def _identity_order(key: tuple[Any, ...]) -> tuple[tuple[int, Any], ...]:
    """Sortable and equal exactly when the identities are: None, then ints, then strings."""
    return tuple((0, 0) if part is None else (1, part) if isinstance(part, int) else (2, part) for part in key)


def write_perf(ctx: RunContext, spill: Spill[PerfDigest], documents: Documents) -> tuple[dict[str, Any], list[str]]:
    """``perf_summary.json`` from the spilled digests (groups by a stable external sort); the document and its problems."""
    with SortedSpill[dict[str, Any] | None]() as by_group:
        fold = PerfSummaryFold(by_group)
        for digest in spill:
            fold.add(digest.group, digest.record)
        document = fold.document()
    documents.put(ctx.paths.perf_summary, dumps(document, indent=True) + b"\n")
    return document, fold.problems


def write_outputs(ctx: RunContext, attempts: Spill[AttemptRef], all_or_nothing: bool, result: ReduceSummary) -> None:
    with ExitStack() as stack:
        analysis = RunAnalysis(ctx, stack)
        fold = _MainFold.open(stack, AtifOutputs.open(stack, ctx.paths.atif, all_or_nothing), analysis)
        rollouts = _rows_writer(stack, ctx.paths.rollouts)
        result.rows[MAIN] = _write_rows(ctx, _of_source(attempts, MAIN), rollouts, result.log, fold.add)
        if ctx.has_failures:
            failures = _rows_writer(stack, ctx.paths.failures)
            result.rows[FAILURES] = _write_rows(ctx, _of_source(attempts, FAILURES), failures, result.log, analysis.add)
        masked: set[int] = set()
        verdict_lines: Spill[str] = stack.enter_context(Spill())
        documents = stack.enter_context(Documents(remote=not ctx.run_dir.is_local))
        result.verdicts = write_health(ctx, fold.health, masked, verdict_lines, documents)
        perf, perf_problems = write_perf(ctx, fold.perf, documents)
        result.fold_problems = [f"perf_summary: {problem}" for problem in perf_problems]
        score_problems, scores = write_scores(ctx, fold.scores, masked, perf.get("groups") or {}, perf_problems, documents)
        result.fold_problems += score_problems
        result.scores = key_metrics(scores)
        result.fold_problems += [f"{name}: {count} main rows without a digest" for name, count in sorted(fold.unavailable.items())]
        capabilities = build_capabilities(fold.capabilities)
        documents.put(ctx.paths.capabilities, dumps(capabilities, indent=True) + b"\n")
        result.histograms = {**histogram_values(fold.capabilities), "reward": reward_values(digest for _, digest in fold.scores)}
        result.atif_published = write_atif(ctx, fold.atif)
        analysis.finish(result.log.entries(), verdict_lines, result.atif_published)
        result.tables_seconds = analysis.seconds
    result.atif_files = fold.atif.accepted if result.atif_published else 0
    result.atif_rejections = fold.atif.rejections.count
