"""The reduce: per-attempt parts -> the run's outputs, streaming in input order.

Parts are read once each (with bounded read-ahead) and each output is written atomically. The
one pass over the main parts writes ``rollouts.jsonl`` and spills every per-attempt record a
fold needs (health digests, perf records, capability digests, accepted ATIF files) to local
temporary files; each fold then streams its spill. Memory holds only the folds' own state:
counters, the identities seen (duplicates, the ATIF first-wins rule) and one sort buffer for the
verdict lines, so it does not grow by kilobytes per attempt (DESIGN.md invariant 6).
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import orjson
from prefect import task
from prefect.cache_policies import NO_CACHE

from evidence import (
    HealthFold,
    RowDigest,
    build_capabilities,
    compute_perf_summary,
    duplicate_key_message,
    histogram_values,
    rejected_rows_message,
    verdict_line,
    verdict_order,
)
from tasks.context import RunContext
from tasks.discover import FAILURES, MAIN, AttemptRef
from tasks.manifest import AttemptLog
from tasks.parts import decode_part, part_location
from tasks.prefetch import ordered_prefetch
from tasks.retry import retry_on_transient
from tasks.spill import SortedSpill, Spill, count_repeats
from tasks.storage import atomic_writer

INDENT = orjson.OPT_INDENT_2


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


def _parts(ctx: RunContext, attempts: Iterable[AttemptRef]) -> Iterator[tuple[AttemptRef, dict[str, Any], list[bytes]]]:
    def load(attempt: AttemptRef) -> tuple[AttemptRef, dict[str, Any], list[bytes]]:
        header, blobs = decode_part(part_location(ctx.run_dir, attempt.source, attempt.line).read_bytes())
        return attempt, header, blobs

    return ordered_prefetch(load, attempts)


def _write_rows(ctx: RunContext, attempts: Iterable[AttemptRef], name: str, log: AttemptLog) -> int:
    """Concatenate the enriched lines of one source, in input order."""
    count = 0
    with atomic_writer(ctx.run_dir.child(name)) as out:
        for attempt, header, blobs in _parts(ctx, attempts):
            out.write(blobs[0])
            out.write(b"\n")
            log.add(attempt.source, attempt.line, header)
            count += 1
    return count


def _of_source(attempts: Iterable[AttemptRef], source: str) -> Iterator[AttemptRef]:
    return (attempt for attempt in attempts if attempt.source == source)


@dataclass(slots=True)
class _AtifState:
    """ATIF decisions taken in input order: the first (task, rollout) key in ``seen`` wins."""

    accepted: Spill  # (line, file name) of each accepted main attempt, input order
    manifest: Spill  # manifest lines, input order
    rejections: Spill  # {"line", "rollout_id", "error"}, input order

    def decide(self, attempt: AttemptRef, header: dict[str, Any], seen: set[tuple[str, ...]]) -> None:
        atif = header["atif"]
        if "error" in atif:
            self._reject(attempt, header, atif["error"])
            return
        key = tuple(atif["key"])
        if key in seen:
            self._reject(attempt, header, duplicate_key_message(key))
            return
        seen.add(key)
        self.accepted.add((attempt.line, atif["name"]))
        self.manifest.add(atif["manifest"])

    def _reject(self, attempt: AttemptRef, header: dict[str, Any], message: str) -> None:
        self.rejections.add({"line": attempt.out_line, "rollout_id": header.get("rollout_id"), "error": message})


@dataclass(slots=True)
class _MainFold:
    """Where the main pass puts each attempt's small records: spills, plus the ATIF decisions."""

    health: Spill  # RowDigest, input order
    perf: Spill  # (group, perf summary input or None)
    capabilities: Spill
    atif: _AtifState

    @classmethod
    def open(cls, stack: ExitStack) -> _MainFold:
        """Empty spills, deleted when ``stack`` closes."""

        def spill() -> Spill:
            return stack.enter_context(Spill())

        return cls(spill(), spill(), spill(), _AtifState(spill(), spill(), spill()))


def _fold_main(ctx: RunContext, attempts: Iterable[AttemptRef], fold: _MainFold, log: AttemptLog) -> int:
    """One streaming pass over the main parts: rollouts.jsonl plus every fold's spill; the row count."""
    count = 0
    seen: set[tuple[str, ...]] = set()  # ATIF keys: needed only during this pass
    with atomic_writer(ctx.rollouts_out) as out:
        for attempt, header, blobs in _parts(ctx, attempts):
            out.write(blobs[0])
            out.write(b"\n")
            log.add(attempt.source, attempt.line, header)
            fold.health.add(RowDigest.from_json(header["health"]))
            fold.atif.decide(attempt, header, seen)
            fold.perf.add((header["perf"]["group"], header["perf"]["record"]))
            fold.capabilities.add(header["capability"])
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
        ctx.health_dir.child("quality_summary.json").write_bytes(fold.summary_text().encode())
        with atomic_writer(ctx.health_dir.child("rollout_verdicts.jsonl")) as out:
            for _, line in lines.items():
                out.write(line.encode())
    return fold.verdicts


def _identity_order(key: tuple[Any, ...]) -> tuple[tuple[int, Any], ...]:
    """Sortable and equal exactly when the identities are: None, then ints, then strings."""
    return tuple((0, 0) if part is None else (1, part) if isinstance(part, int) else (2, part) for part in key)


def _write_perf(ctx: RunContext, spill: Spill[tuple[str, dict[str, Any] | None]]) -> None:
    """The run summary over every main row, then one per group, each streamed in file order.

    Float totals depend on the order, so a group's records come from a stable sort by group.
    """
    sizes: Counter[str] = Counter()
    groups: dict[str, Any] = {}
    with SortedSpill[dict[str, Any] | None]() as by_group:
        for name, record in spill:
            sizes[name] += 1
            by_group.add(name, record)
        for name, items in itertools.groupby(by_group.items(), key=_group_of):
            groups[name] = compute_perf_summary((record for _, record in items), sizes[name])
    document = {"run": compute_perf_summary((record for _, record in spill), spill.count), "groups": groups}
    ctx.run_dir.child("perf_summary.json").write_bytes(orjson.dumps(document, option=INDENT) + b"\n")


def _group_of(item: tuple[str, Any]) -> str:
    return item[0]


def _write_atif(ctx: RunContext, atif: _AtifState, all_or_nothing: bool) -> bool:
    """Publish accepted ATIF files + manifest, or (all-or-nothing with a rejection) only error.txt."""
    folder = ctx.run_dir.child("atif")
    folder.child("rejections.jsonl").write_chunks(lambda: (orjson.dumps(r) + b"\n" for r in atif.rejections))
    if all_or_nothing and atif.rejections.count:
        text = rejected_rows_message([(r["line"], r["error"]) for r in atif.rejections])
        folder.child("error.txt").write_bytes(text.encode())
        return False

    def publish(accepted: tuple[int, str]) -> None:
        line, name = accepted
        _, blobs = decode_part(part_location(ctx.run_dir, MAIN, line).read_bytes())
        folder.child(name).write_bytes(blobs[1])

    for _ in ordered_prefetch(publish, iter(atif.accepted)):
        pass
    with atomic_writer(folder.child("manifest.jsonl")) as out:
        for entry in atif.manifest:
            out.write(entry.encode() + b"\n")
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
        fold = _MainFold.open(stack)
        result.rows[MAIN] = _fold_main(ctx, _of_source(attempts, MAIN), fold, result.log)
        if ctx.failures is not None:
            result.rows[FAILURES] = _write_rows(ctx, _of_source(attempts, FAILURES), "rollouts_failures.jsonl", result.log)
        result.verdicts = _write_health(ctx, fold.health)
        _write_perf(ctx, fold.perf)
        capabilities = build_capabilities(fold.capabilities)
        ctx.run_dir.child("capabilities.json").write_bytes(orjson.dumps(capabilities, option=INDENT) + b"\n")
        result.histograms = histogram_values(fold.capabilities)
        result.atif_published = _write_atif(ctx, fold.atif, all_or_nothing)
    result.atif_files = fold.atif.accepted.count if result.atif_published else 0
    result.atif_rejections = fold.atif.rejections.count
