"""The reduce: per-attempt parts -> the run's outputs, streaming in input order.

Parts are read once each (with bounded read-ahead) and each output is written atomically.
Memory holds only what a fold needs all at once: the health digests (duplicate identities and
task checks look across rows) and compact perf records (quantiles). Capability digests and ATIF
manifest lines are spilled to a local temporary file and folded from it, so the reduce's
footprint grows by a few hundred bytes per attempt, not kilobytes.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import orjson
from prefect import task
from prefect.cache_policies import NO_CACHE

from evidence import (
    HealthResult,
    RowDigest,
    build_capabilities,
    compute_perf_summary,
    duplicate_key_message,
    histogram_values,
    reduce_digests,
    rejected_rows_message,
)
from tasks.context import RunContext
from tasks.discover import FAILURES, MAIN, AttemptRef
from tasks.parts import decode_part, part_location
from tasks.prefetch import ordered_prefetch
from tasks.retry import retry_on_transient
from tasks.storage import atomic_writer

INDENT = orjson.OPT_INDENT_2


@dataclass(slots=True)
class ReduceSummary:
    """Counts the run manifest and the CLI report."""

    rows: dict[str, int] = field(default_factory=dict)
    atif_files: int = 0
    atif_rejections: int = 0
    atif_published: bool = True
    verdicts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    histograms: dict[str, list[float]] = field(default_factory=dict)


def _parts(ctx: RunContext, attempts: list[AttemptRef]) -> Iterator[tuple[AttemptRef, dict[str, Any], list[bytes]]]:
    def load(attempt: AttemptRef) -> tuple[AttemptRef, dict[str, Any], list[bytes]]:
        header, blobs = decode_part(part_location(ctx.run_dir, attempt).read_bytes())
        return attempt, header, blobs

    return ordered_prefetch(load, attempts)


def _write_rows(ctx: RunContext, attempts: list[AttemptRef], name: str) -> int:
    """Concatenate the enriched lines of one source, in input order."""
    count = 0
    with atomic_writer(ctx.run_dir.child(name)) as out:
        for _, _, blobs in _parts(ctx, attempts):
            out.write(blobs[0])
            out.write(b"\n")
            count += 1
    return count


class _Spill:
    """An append-only local temporary JSONL file of small records, read back as a stream."""

    def __init__(self) -> None:
        self._file: IO[bytes] = tempfile.TemporaryFile()
        self.count = 0

    def add(self, record: Any) -> None:
        self._file.write(orjson.dumps(record) + b"\n")
        self.count += 1

    def __iter__(self) -> Iterator[Any]:
        self._file.seek(0)
        return (orjson.loads(line) for line in self._file)

    def close(self) -> None:
        self._file.close()


@dataclass(slots=True)
class _AtifState:
    """ATIF decisions taken in input order: first (task, rollout) key wins."""

    seen: set[tuple[str, str]] = field(default_factory=set)
    rejections: list[dict[str, Any]] = field(default_factory=list)
    accepted: dict[str, str] = field(default_factory=dict)  # attempt key -> file name
    manifest: _Spill = field(default_factory=_Spill)  # manifest lines, input order

    def decide(self, attempt: AttemptRef, header: dict[str, Any]) -> None:
        atif = header["atif"]
        if "error" in atif:
            self._reject(attempt, header, atif["error"])
            return
        key = tuple(atif["key"])
        if key in self.seen:
            self._reject(attempt, header, duplicate_key_message(key))
            return
        self.seen.add(key)
        self.accepted[attempt.key] = atif["name"]
        self.manifest.add(atif["manifest"])

    def _reject(self, attempt: AttemptRef, header: dict[str, Any], message: str) -> None:
        self.rejections.append({"line": attempt.out_line, "rollout_id": header.get("rollout_id"), "error": message})


@dataclass(slots=True)
class _MainFold:
    """The small per-attempt digests gathered while main rows stream into rollouts.jsonl."""

    health: list[RowDigest] = field(default_factory=list)
    atif: _AtifState = field(default_factory=_AtifState)
    perf: dict[str, list[bytes | None]] = field(default_factory=dict)  # compact: decoded per summary
    capabilities: _Spill = field(default_factory=_Spill)


def _fold_main(ctx: RunContext, attempts: list[AttemptRef]) -> _MainFold:
    """One streaming pass over the main parts: rollouts.jsonl plus every digest fold."""
    fold = _MainFold()
    with atomic_writer(ctx.rollouts_out) as out:
        for attempt, header, blobs in _parts(ctx, attempts):
            out.write(blobs[0])
            out.write(b"\n")
            fold.health.append(RowDigest.from_json(header["health"]))
            fold.atif.decide(attempt, header)
            record = header["perf"]["record"]
            fold.perf.setdefault(header["perf"]["group"], []).append(None if record is None else orjson.dumps(record))
            fold.capabilities.add(header["capability"])
    return fold


def _write_health(ctx: RunContext, digests: list[RowDigest]) -> dict[str, int]:
    result: HealthResult = reduce_digests(digests, ctx.ignored_checks)
    ctx.health_dir.child("quality_summary.json").write_bytes(result.summary_text().encode())
    with atomic_writer(ctx.health_dir.child("rollout_verdicts.jsonl")) as out:
        for line in result.verdict_lines():
            out.write(line.encode())
    return dict(result.summary()["run"]["verdicts"])


def _write_perf(ctx: RunContext, perf: dict[str, list[bytes | None]]) -> None:
    def summary(rows: list[bytes | None]) -> Any:
        return compute_perf_summary([orjson.loads(r) for r in rows if r is not None], len(rows))

    every = [r for rows in perf.values() for r in rows]
    document = {"run": summary(every), "groups": {name: summary(perf[name]) for name in sorted(perf)}}
    ctx.run_dir.child("perf_summary.json").write_bytes(orjson.dumps(document, option=INDENT) + b"\n")


def _write_atif(ctx: RunContext, attempts: list[AttemptRef], atif: _AtifState, all_or_nothing: bool) -> bool:
    """Publish accepted ATIF files + manifest, or (all-or-nothing with a rejection) only error.txt."""
    folder = ctx.run_dir.child("atif")
    folder.child("rejections.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in atif.rejections))
    if all_or_nothing and atif.rejections:
        text = rejected_rows_message([(r["line"], r["error"]) for r in atif.rejections])
        folder.child("error.txt").write_bytes(text.encode())
        return False
    chosen = [a for a in attempts if a.key in atif.accepted]

    def publish(attempt: AttemptRef) -> None:
        _, blobs = decode_part(part_location(ctx.run_dir, attempt).read_bytes())
        folder.child(atif.accepted[attempt.key]).write_bytes(blobs[1])

    for _ in ordered_prefetch(publish, chosen):
        pass
    with atomic_writer(folder.child("manifest.jsonl")) as out:
        for entry in atif.manifest:
            out.write(entry.encode() + b"\n")
    return True


@task(name="reduce-run", cache_policy=NO_CACHE, persist_result=False, retries=2, retry_condition_fn=retry_on_transient)
def reduce_run(ctx: RunContext, attempts: list[AttemptRef], all_or_nothing: bool) -> ReduceSummary:
    """Write every run-level output from the parts."""
    started = time.perf_counter()
    main = [a for a in attempts if a.source == MAIN]
    failures = [a for a in attempts if a.source == FAILURES]
    result = ReduceSummary()
    fold = _fold_main(ctx, main)
    try:
        result.rows[MAIN] = len(main)
        if ctx.failures is not None:
            result.rows[FAILURES] = _write_rows(ctx, failures, "rollouts_failures.jsonl")
        result.verdicts = _write_health(ctx, fold.health)
        fold.health.clear()
        _write_perf(ctx, fold.perf)
        capabilities = build_capabilities(fold.capabilities)
        ctx.run_dir.child("capabilities.json").write_bytes(orjson.dumps(capabilities, option=INDENT) + b"\n")
        result.histograms = histogram_values(fold.capabilities)
        result.atif_published = _write_atif(ctx, main, fold.atif, all_or_nothing)
    finally:
        fold.capabilities.close()
        fold.atif.manifest.close()
    result.atif_files = len(fold.atif.accepted) if result.atif_published else 0
    result.atif_rejections = len(fold.atif.rejections)
    result.seconds = time.perf_counter() - started
    return result
