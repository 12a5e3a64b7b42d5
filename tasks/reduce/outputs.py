"""The reduce: per-attempt parts -> the run's outputs, consumed group by group in input order.

``RunFolds`` takes each finished group while the fan-out goes on (``tasks.reduce.feed``): it
reads the group's parts once (with bounded read-ahead), writes their lines into
``rollouts.jsonl``, records their manifest entries, folds their health digests, decides their
ATIF files (written at once), judges them into the tables and the viewer, and spills every
other per-attempt record a fold needs (perf records, capability digests, score digests) to
local temporary files, which ``finish`` streams once the last group is in. Each output is
written atomically. Memory holds only the folds' own state: counters, the identities seen
(the ATIF first-wins rule, an all-or-nothing run's batch keys, the score mask) and the sort
buffers, so it does not grow by kilobytes per attempt (README, guarantee 6).
"""

from __future__ import annotations

import io
import itertools
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, Self

from evidence import (
    AttemptOutcome,
    AttemptPart,
    PerfDigest,
    PerfSummaryFold,
    ScoreDigest,
    build_capabilities,
    dumps,
    histogram_values,
    key_metrics,
    reward_values,
)
from tasks.attempts.context import RunContext
from tasks.attempts.parts import read_parts, segment_folder
from tasks.discover.refs import FAILURES, MAIN, AttemptRef
from tasks.reduce.analysis import RunAnalysis
from tasks.reduce.atif_outputs import AtifOutputs, write_atif
from tasks.reduce.attempt_log import AttemptLog
from tasks.reduce.health import HealthOutputs
from tasks.reduce.scores import NO_HEALTH, write_scores
from tasks.storage import Location, atomic_writer
from tasks.storage.concurrent import BinaryWriter, Documents
from tasks.storage.lines import FilePlace, LineWriter
from tasks.storage.spill import SortedSpill, Spill


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


def _parts(ctx: RunContext, attempts: Sequence[AttemptRef]) -> Iterator[tuple[AttemptRef, AttemptPart, FilePlace | None]]:
    """The current part of each attempt and where its line lies locally, in input order
    (segments read ahead; the segments of each shard's source folder that may hold the attempts' lines)."""
    for folder, run in itertools.groupby(attempts, key=_part_folder):
        yield from read_parts(segment_folder(ctx.run_dir, folder), list(run))


def _part_folder(attempt: AttemptRef) -> str:
    return attempt.part_folder


def _rows_writer(stack: ExitStack, target: Location) -> LineWriter:
    """Where one source's output lines go; they are all written, and the file appears, when ``stack`` closes.

    Locally the lines' bytes are copied beside the flow (``LineWriter``) while the reduce goes on
    with its folds: the reduce's stack closes last, after every other output is written.
    """
    return stack.enter_context(LineWriter(stack.enter_context(atomic_writer(target))))


@dataclass(slots=True)
class _MainFold:
    """Where the main pass puts each attempt's digests: the health fold, spills, the ATIF decisions, and what is missing."""

    health: HealthOutputs
    perf: Spill  # PerfDigest, input order
    capabilities: Spill
    scores: Spill  # (health index or NO_HEALTH, ScoreDigest), input order; rows in no group have none
    atif: AtifOutputs
    analysis: RunAnalysis
    unavailable: Counter[str] = field(default_factory=Counter)  # digest name -> rows without it

    @classmethod
    def open(cls, ctx: RunContext, stack: ExitStack, atif: AtifOutputs, analysis: RunAnalysis) -> _MainFold:
        """Empty folds and spills, deleted when ``stack`` closes."""

        def spill() -> Spill:
            return stack.enter_context(Spill())

        return cls(HealthOutputs(ctx, stack), spill(), spill(), spill(), atif, analysis)

    def add(self, attempt: AttemptRef, outcome: AttemptOutcome, entry: dict[str, Any]) -> None:
        digests = outcome.main
        assert digests is not None, "a main attempt always has digests"
        verdict = None
        if digests.score is not None:
            self.scores.add((self.health.count if digests.health is not None else NO_HEALTH, digests.score))
        if digests.health is None:
            self.unavailable["health"] += 1
        else:
            verdict = self.health.add(digests.health)
        for name, digest, spill in (("perf", digests.perf, self.perf), ("capabilities", digests.capability, self.capabilities)):
            if digest is None:
                self.unavailable[name] += 1
            else:
                spill.add(digest)
        self.analysis.add(attempt, outcome, entry, self.atif.decide(attempt, outcome, digests.atif), verdict)


class DocumentSink(Protocol):
    """Where the reduce's documents go: written (``Documents``) or gathered (``Gathered``);
    whole (``put``) or as their bytes are made (``stream``)."""

    def put(self, target: Location, data: bytes) -> None: ...

    def stream(self, target: Location) -> AbstractContextManager[BinaryWriter]: ...


class Gathered:
    """Documents kept in memory instead of written (``RunFolds.documents``): a ``Documents`` stand-in."""

    def __init__(self) -> None:
        self.documents: dict[Location, bytes] = {}

    def put(self, target: Location, data: bytes) -> None:
        self.documents[target] = data

    @contextmanager
    def stream(self, target: Location) -> Iterator[BinaryWriter]:
        """A snapshot's document is kept whole anyway: its bytes gathered, then ``put``."""
        buffer = io.BytesIO()
        yield buffer
        self.put(target, buffer.getvalue())


def write_perf(ctx: RunContext, spill: Iterable[PerfDigest], documents: DocumentSink) -> tuple[dict[str, Any], list[str]]:
    """``perf_summary.json`` from the spilled digests (groups by a stable external sort); the document and its problems."""
    with SortedSpill[dict[str, Any] | None]() as by_group:
        fold = PerfSummaryFold(by_group)
        for digest in spill:
            fold.add(digest.group, digest.record)
        document = fold.document()
    documents.put(ctx.paths.perf_summary, dumps(document, indent=True) + b"\n")
    return document, fold.problems


class Unfinished(Exception):  # not an error raised: what an unfinished reduce's writers are closed with
    """The reduce was closed before ``finish``: its outputs are discarded."""


@dataclass(frozen=True, slots=True)
class FoldSnapshot:
    """The run's counts as they stand after the attempts folded so far (``RunFolds.snapshot``)."""

    attempts: int
    rows: dict[str, int]
    by_status: dict[str, int]
    verdicts: dict[str, int]  # main rows per health verdict (a repeated identity found later changes some)
    atif_files: int  # accepted so far (an all-or-nothing run may still publish none)
    atif_rejections: int
    unavailable: dict[str, int]  # digest name -> main rows without it


@dataclass(frozen=True, slots=True)
class _Folded:
    """What the run-level documents are made from: the main pass's spills (or prefixes of them) and its small state."""

    perf: Iterable[PerfDigest]
    scores: Iterable[tuple[int, ScoreDigest]]  # (health index or NO_HEALTH, digest)
    capabilities: Iterable[dict[str, Any]]
    masked: Sequence[int]  # a byte per main row with a health digest (HealthOutputs.masked)
    unavailable: Mapping[str, int]

    def documents(self, ctx: RunContext, documents: DocumentSink) -> tuple[list[str], dict[str, Any]]:
        """The perf summary, the score files and the capabilities to ``documents``; the fold problems and ``scores.json``'s document."""
        perf, perf_problems = write_perf(ctx, self.perf, documents)
        problems = [f"perf_summary: {problem}" for problem in perf_problems]
        score_problems, scores = write_scores(ctx, self.scores, self.masked, perf.get("groups") or {}, perf_problems, documents)
        problems += score_problems
        problems += [f"{name}: {count} main rows without a digest" for name, count in sorted(self.unavailable.items())]
        documents.put(ctx.paths.capabilities, dumps(build_capabilities(self.capabilities), indent=True) + b"\n")
        return problems, scores

    def histograms(self) -> dict[str, list[float]]:
        """The report's histogram values: latency, tokens per turn, reward."""
        return {**histogram_values(self.capabilities), "reward": reward_values(digest for _, digest in self.scores)}


@dataclass(frozen=True, slots=True)
class Standing:
    """The run as it stands after the groups folded so far (``RunFolds.standing``): what a followed job's snapshot publishes."""

    counts: FoldSnapshot
    documents: dict[Location, bytes]  # by where ``finish`` writes them (health summary, perf, scores, capabilities)
    histograms: dict[str, list[float]]
    scores: dict[str, Any]  # evidence.key_metrics of scores.json
    fold_problems: list[str]
    entries: Iterable[dict[str, Any]]  # the manifest's attempt entries recorded so far (AttemptLog.recorded)
    repairs: int


class RunFolds:
    """The reduce as a consumer: every run-level output from the attempts' parts, fed group by group.

    ``consume`` takes each finished group in input order (while the fan-out goes on, from
    ``tasks.reduce.feed.Feed``): it reads the group's parts, writes their lines, records their
    manifest entries and folds their digests, so what is left when the last group is in is
    ``finish``: the folds that need the whole run (duplicate identities, sorted verdicts, the
    scores' masks, all-or-nothing ATIF, each attempt's judged table row and viewer page).
    ``snapshot`` says how the counts stand at any moment; ``close`` (or leaving the block)
    deletes the spills and discards what was not finished.
    """

    def __init__(self, ctx: RunContext, all_or_nothing: bool) -> None:
        self._ctx = ctx
        self._stack = ExitStack()
        self._lock = threading.Lock()  # one consume, snapshot or finish at a time
        self.summary = ReduceSummary(AttemptLog())  # the caller's once finished: the manifest reads it
        self._finished = False
        self.seconds = 0.0  # spent consuming and finishing: the reduce's own time
        try:
            self._analysis = RunAnalysis(ctx, self._stack)
            self._main = _MainFold.open(ctx, self._stack, AtifOutputs.open(self._stack, ctx.paths.atif, all_or_nothing), self._analysis)
            self._writers: dict[str, LineWriter] = {}
        except BaseException:
            self.close()
            raise

    def consume(self, group: Sequence[AttemptRef]) -> None:
        """Fold one group of attempts of one source, the next in input order."""
        if not group:
            return
        started = time.perf_counter()
        with self._lock:
            source = group[0].source
            lines = self._writer(source)
            log, add = self.summary.log, self._main.add if source == MAIN else self._analysis.add
            rows = self.summary.rows.get(source, 0)
            for attempt, part, place in _parts(self._ctx, group):
                lines.write(part.outcome.line, place)
                add(attempt, part.outcome, log.add(attempt, part))
                rows += 1
            self.summary.rows[source] = rows
        self.seconds += time.perf_counter() - started

    def snapshot(self) -> FoldSnapshot:
        """The counts after every group consumed so far (never a group half folded); cheap, unlike ``documents``."""
        with self._lock:
            return self._counts()

    def _counts(self) -> FoldSnapshot:
        log = self.summary.log
        return FoldSnapshot(
            attempts=log.count,
            rows=dict(self.summary.rows),
            by_status=dict(sorted(log.by_status.items())),
            verdicts=dict(self._main.health.verdicts),
            atif_files=self._main.atif.accepted,
            atif_rejections=self._main.atif.rejections.count,
            unavailable=dict(sorted(self._main.unavailable.items())),
        )

    def documents(self) -> dict[Location, bytes]:
        """The run-level documents as they stand after every group consumed so far, by where
        ``finish`` writes them: the health summary (before the identities are counted: no
        duplicate-identity finding yet), the perf summary, the three score files, the capabilities."""
        return self.standing().documents

    def standing(self) -> Standing:
        """Counts, documents, histograms and manifest entries after every group consumed so far.

        Only taking the view holds the folds (prefixes of their spills, copies of their small
        state: a moment); the documents are made from it outside the lock, so the folds go on
        consuming meanwhile and a followed job's end never waits for a snapshot's documents.
        """
        with self._lock:
            fold = self._main
            counts = self._counts()
            summary = fold.health.summary_text().encode()
            folded = _Folded(
                fold.perf.prefix(), fold.scores.prefix(), fold.capabilities.prefix(), bytes(fold.health.masked), dict(fold.unavailable)
            )
            entries, repairs = self.summary.log.recorded(), self.summary.log.repairs
        gathered = Gathered()
        gathered.put(self._ctx.paths.quality_summary, summary)
        problems, scores = folded.documents(self._ctx, gathered)
        return Standing(counts, gathered.documents, folded.histograms(), key_metrics(scores), problems, entries, repairs)

    def _writer(self, source: str) -> LineWriter:
        """Where a source's output lines go, opened when its first group comes (main rows come first)."""
        if source not in self._writers:
            self._writers[source] = _rows_writer(self._stack, self._ctx.paths.rollouts if source == MAIN else self._ctx.paths.failures)
        return self._writers[source]

    def finish(self) -> ReduceSummary:
        """Every run-level output once the last group is consumed; the summary (its log stays open for the manifest)."""
        started = time.perf_counter()
        ctx, fold, result, stack = self._ctx, self._main, self.summary, self._stack
        with self._lock, stack:
            self._writer(MAIN)
            result.rows.setdefault(MAIN, 0)
            if ctx.has_failures:
                self._writer(FAILURES)
                result.rows.setdefault(FAILURES, 0)
            documents = stack.enter_context(Documents(remote=not ctx.run_dir.is_local))
            verdicts_stand = fold.health.finish(documents)
            result.verdicts = fold.health.verdicts
            folded = _Folded(fold.perf, fold.scores, fold.capabilities, fold.health.masked, fold.unavailable)
            result.fold_problems, scores = folded.documents(ctx, documents)
            result.scores = key_metrics(scores)
            result.histograms = folded.histograms()
            result.atif_published = write_atif(ctx, fold.atif)
            if verdicts_stand and result.atif_published and not result.log.shares_rollout_ids():
                self._analysis.finish()  # every attempt stands as judged when consumed
            else:
                self._analysis.finish(result.log.entries(), None if verdicts_stand else fold.health.lines(), result.atif_published)
            result.tables_seconds = self._analysis.seconds
        result.atif_files = fold.atif.accepted if result.atif_published else 0
        result.atif_rejections = fold.atif.rejections.count
        self.seconds += time.perf_counter() - started
        result.seconds = self.seconds
        self._finished = True
        return result

    def close(self) -> None:
        """Delete the spills; unless finished, discard every output begun (never publish a part of one) and the log.

        The outputs' writers commit when their block ends without an error, so the stack is left
        as if on one: ``Unfinished``.
        """
        if self._finished:
            self._stack.close()  # already closed by finish: nothing left
            return
        try:
            self._stack.__exit__(Unfinished, Unfinished(), None)
        finally:
            self.summary.log.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


REFOLD_GROUP = 1000
"""Attempts per ``consume`` when the reduce starts over from the parts (``fold_all``)."""


def fold_all(ctx: RunContext, attempts: Iterable[AttemptRef], all_or_nothing: bool) -> ReduceSummary:
    """The whole reduce at once from the parts: new folds fed every attempt, then finished (a retried reduce)."""
    with RunFolds(ctx, all_or_nothing) as folds:
        for _, run in itertools.groupby(attempts, key=_part_folder):
            while chunk := list(itertools.islice(run, REFOLD_GROUP)):
                folds.consume(chunk)
        return folds.finish()
