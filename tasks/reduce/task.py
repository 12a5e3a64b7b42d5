"""The reduce: per-attempt parts -> the run's outputs, streaming in input order.

Parts are read once each (with bounded read-ahead) and each output is written atomically. The
one pass over the main parts writes ``rollouts.jsonl`` and spills every per-attempt record a
fold needs (health digests, perf records, capability digests, accepted ATIF files) to local
temporary files; each fold then streams its spill. Memory holds only the folds' own state:
counters, the identities seen (duplicates, the ATIF first-wins rule, an all-or-nothing run's batch keys) and one sort buffer for the
verdict lines, so it does not grow by kilobytes per attempt (README, guarantee 6).
"""

from __future__ import annotations

import functools
import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from evidence import (
    AtifAcceptance,
    AtifFile,
    AtifRefusal,
    AttemptOutcome,
    AttemptPart,
    HealthFold,
    PerfDigest,
    PerfSummaryFold,
    RowDigest,
    build_capabilities,
    dumps,
    histogram_values,
    verdict_line,
    verdict_order,
)
from tasks.attempts.context import RunContext
from tasks.attempts.parts import read_parts, segment_folder
from tasks.discover.refs import FAILURES, MAIN, AttemptRef
from tasks.reduce.attempt_log import AttemptLog
from tasks.storage import Location, atomic_writer
from tasks.storage.concurrent import WriteBehind, ordered_prefetch
from tasks.storage.retry import retry_on_transient
from tasks.storage.spill import SortedSpill, Spill, count_repeats

# Accepted ATIF files written behind the main pass: this many at once, this many bytes waiting.
# Small: at 32 MiB this budget filled only on large jobs and was 7 MiB of the flow process's
# peak at 20,000 attempts (tests/reliability/test_memory.py compares with 2,000).
ATIF_WRITE_WINDOW = 8
ATIF_WRITE_BUDGET_BYTES = 8 * 1024 * 1024


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
    histograms: dict[str, list[float]] = field(default_factory=dict)
    fold_problems: list[str] = field(default_factory=list)  # values no fold could use, and missing digests


def _parts(ctx: RunContext, attempts: Iterable[AttemptRef]) -> Iterator[tuple[AttemptRef, AttemptPart]]:
    """The current part of each attempt, in input order (segments read ahead; one index per shard's source folder)."""
    for folder, run in itertools.groupby(attempts, key=_part_folder):
        yield from read_parts(segment_folder(ctx.run_dir, folder), run)


def _part_folder(attempt: AttemptRef) -> str:
    return attempt.part_folder


def _write_rows(ctx: RunContext, attempts: Iterable[AttemptRef], target: Location, log: AttemptLog) -> int:
    """Concatenate the output lines of one source, in input order."""
    count = 0
    with atomic_writer(target) as out:
        for attempt, part in _parts(ctx, attempts):
            out.write(part.outcome.line)
            out.write(b"\n")
            log.add(attempt, part)
            count += 1
    return count


def _of_source(attempts: Iterable[AttemptRef], source: str) -> Iterator[AttemptRef]:
    return (attempt for attempt in attempts if attempt.source == source)


@dataclass(slots=True)
class _AtifOutputs:
    """Where the ATIF decisions (``evidence.folds.AtifAcceptance``) go, in input order.

    An accepted file is final when it is decided, so it is written at once (behind the pass,
    a few at a time); only an all-or-nothing run, which may still publish none, spills the
    accepted files to local disk until its last row is seen, with the texts its replay of
    0.7.0's batch export recorded (its ``error.txt`` says them).
    """

    acceptance: AtifAcceptance
    accept: Callable[[AtifFile], None]  # each accepted main attempt's file, input order
    manifest: Spill  # manifest lines, input order
    rejections: Spill  # {"line", "rollout_id", "error"}, input order
    held: Spill | None = None  # an all-or-nothing run's accepted files
    batch_refused: Spill | None = None  # an all-or-nothing run's recorded texts
    writes: WriteBehind | None = None  # the accepted files being written (any other run)
    accepted: int = 0

    @classmethod
    def open(cls, stack: ExitStack, folder: Location, all_or_nothing: bool) -> _AtifOutputs:
        """Files written into ``folder``, or held until the end for an all-or-nothing run."""
        manifest, rejections = stack.enter_context(Spill()), stack.enter_context(Spill())
        acceptance = AtifAcceptance(all_or_nothing)
        if all_or_nothing:
            files: Spill[AtifFile] = stack.enter_context(Spill(batch=1))  # a file can be megabytes
            return cls(acceptance, files.add, manifest, rejections, held=files, batch_refused=stack.enter_context(Spill()))
        writes = stack.enter_context(WriteBehind(window=ATIF_WRITE_WINDOW, budget=ATIF_WRITE_BUDGET_BYTES))

        def write(accepted: AtifFile) -> None:
            writes.submit(functools.partial(_write_file, folder, accepted), accepted.size)

        return cls(acceptance, write, manifest, rejections, writes=writes)

    def decide(self, attempt: AttemptRef, outcome: AttemptOutcome, atif: AtifFile | AtifRefusal) -> None:
        decision = self.acceptance.decide(attempt.out_line, outcome.rollout_id, atif)
        if decision.batch_refusal is not None and self.batch_refused is not None:
            self.batch_refused.add(decision.batch_refusal)
        if decision.rejection is not None:
            self.rejections.add(decision.rejection)
        if decision.accepted is not None:
            self.accept(decision.accepted)
            self.accepted += 1
            self.manifest.add(decision.accepted.manifest_line)


@dataclass(slots=True)
class _MainFold:
    """Where the main pass puts each attempt's digests: spills, the ATIF decisions, and what is missing."""

    health: Spill  # RowDigest, input order
    perf: Spill  # PerfDigest, input order
    capabilities: Spill
    atif: _AtifOutputs
    unavailable: Counter[str] = field(default_factory=Counter)  # digest name -> rows without it

    @classmethod
    def open(cls, stack: ExitStack, atif: _AtifOutputs) -> _MainFold:
        """Empty spills, deleted when ``stack`` closes."""

        def spill() -> Spill:
            return stack.enter_context(Spill())

        return cls(spill(), spill(), spill(), atif)

    def add(self, attempt: AttemptRef, outcome: AttemptOutcome) -> None:
        digests = outcome.main
        assert digests is not None, "a main attempt always has digests"
        for name, digest, spill in (
            ("health", digests.health, self.health),
            ("perf", digests.perf, self.perf),
            ("capabilities", digests.capability, self.capabilities),
        ):
            if digest is None:
                self.unavailable[name] += 1
            else:
                spill.add(digest)
        self.atif.decide(attempt, outcome, digests.atif)


def _fold_main(ctx: RunContext, attempts: Iterable[AttemptRef], fold: _MainFold, log: AttemptLog) -> int:
    """One streaming pass over the main parts: rollouts.jsonl plus every fold's spill; the row count."""
    count = 0
    with atomic_writer(ctx.paths.rollouts) as out:
        for attempt, part in _parts(ctx, attempts):
            out.write(part.outcome.line)
            out.write(b"\n")
            log.add(attempt, part)
            fold.add(attempt, part.outcome)
            count += 1
    return count


def _write_health(ctx: RunContext, spill: Spill[RowDigest]) -> dict[str, int]:
    """Both health files from the spilled digests: count identities, fold, sort the verdict lines."""
    repeated = count_repeats((digest.identity_key for digest in spill), _identity_order)
    fold = HealthFold(ctx.ignored_checks, repeated)
    with SortedSpill[str]() as lines:
        for digest in spill:
            reported = fold.add(digest)
            lines.add(verdict_order(reported), verdict_line(reported))
        ctx.paths.quality_summary.write_bytes(fold.summary_text().encode())
        with atomic_writer(ctx.paths.verdicts) as out:
            for _, line in lines.items():
                out.write(line.encode())
    return fold.verdicts


def _identity_order(key: tuple[Any, ...]) -> tuple[tuple[int, Any], ...]:
    """Sortable and equal exactly when the identities are: None, then ints, then strings."""
    return tuple((0, 0) if part is None else (1, part) if isinstance(part, int) else (2, part) for part in key)


def _write_perf(ctx: RunContext, spill: Spill[PerfDigest]) -> list[str]:
    """``perf_summary.json`` from the spilled digests (groups by a stable external sort); its problems."""
    with SortedSpill[dict[str, Any] | None]() as by_group:
        fold = PerfSummaryFold(by_group)
        for digest in spill:
            fold.add(digest.group, digest.record)
        document = fold.document()
    ctx.paths.perf_summary.write_bytes(dumps(document, indent=True) + b"\n")
    return fold.problems


def _write_file(folder: Location, accepted: AtifFile) -> None:
    folder.child(accepted.name).write_chunks(accepted.chunks)


def _write_atif(ctx: RunContext, atif: _AtifOutputs) -> bool:
    """The rejections and the manifest; for an all-or-nothing run, its held files, or only error.txt when 0.7.0's batch export fails."""
    paths = ctx.paths
    folder = paths.atif
    if atif.writes is not None:
        atif.writes.drain()  # the manifest lists only files that are written
    paths.atif_rejections.write_chunks(lambda: (dumps(r) + b"\n" for r in atif.rejections))
    if atif.held is not None and atif.batch_refused is not None:
        error = atif.acceptance.batch_error(list(atif.batch_refused))
        if error is not None:
            paths.atif_error.write_bytes(error.encode())
            return False

        for _ in ordered_prefetch(functools.partial(_write_file, folder), iter(atif.held)):
            pass
    with atomic_writer(paths.atif_manifest) as out:
        for entry in atif.manifest:
            out.write(entry + b"\n")
    return True


@task(name="reduce-run", cache_policy=NO_CACHE, persist_result=False, retries=2, retry_condition_fn=retry_on_transient)
def reduce_run(ctx: RunContext, attempts: Spill[AttemptRef], all_or_nothing: bool) -> ReduceSummary:
    """Write every run-level output from the parts; the summary's ``log`` holds each attempt's manifest entry.

    A retried reduce starts over with a new log, so no entry is recorded twice.
    """
    started = time.perf_counter()
    result = ReduceSummary(AttemptLog())
    try:
        _reduce(ctx, attempts, all_or_nothing, result)
    except BaseException:
        result.log.close()
        raise
    result.seconds = time.perf_counter() - started
    return result


def _reduce(ctx: RunContext, attempts: Spill[AttemptRef], all_or_nothing: bool, result: ReduceSummary) -> None:
    with ExitStack() as stack:
        fold = _MainFold.open(stack, _AtifOutputs.open(stack, ctx.paths.atif, all_or_nothing))
        result.rows[MAIN] = _fold_main(ctx, _of_source(attempts, MAIN), fold, result.log)
        if ctx.has_failures:
            result.rows[FAILURES] = _write_rows(ctx, _of_source(attempts, FAILURES), ctx.paths.failures, result.log)
        result.verdicts = _write_health(ctx, fold.health)
        result.fold_problems = [f"perf_summary: {problem}" for problem in _write_perf(ctx, fold.perf)]
        result.fold_problems += [f"{name}: {count} main rows without a digest" for name, count in sorted(fold.unavailable.items())]
        capabilities = build_capabilities(fold.capabilities)
        ctx.paths.capabilities.write_bytes(dumps(capabilities, indent=True) + b"\n")
        result.histograms = histogram_values(fold.capabilities)
        result.atif_published = _write_atif(ctx, fold.atif)
    result.atif_files = fold.atif.accepted if result.atif_published else 0
    result.atif_rejections = fold.atif.rejections.count
