"""The work of the fan-out: one group of attempts, each read -> evidence -> written on its own.

Inside a group every attempt is isolated: a content problem becomes evidence or a reported bad
attempt, and only a storage failure escapes (after the storage layer's own retries) to let
Prefect retry the group task (``tasks.fanout``), which then redoes only the attempts whose part
is not written yet. No Prefect import here: worker processes of the attempt pool import this
module alone, which keeps their start-up cheap.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from evidence import (
    AtifExportError,
    CaptureFiles,
    CaptureLookup,
    Exporter,
    capability_digest,
    collect_row,
    convert_orjson_row,
    convert_rollout,
    dump_row,
    evaluate_row,
    orjson_line,
    summary_input,
)
from tasks.context import EXPORTER_NAME, RunContext
from tasks.discover import JSONL_SUFFIX, MAIN, MARKER_SUFFIX, AttemptRef
from tasks.parts import decode_part, encode_part, part_location
from tasks.storage import InputNotFound

# A group's rows are read by ranged reads of about this size: few requests, bounded memory.
READ_CHUNK_BYTES = 16 * 1024 * 1024


@dataclass(slots=True)
class GroupSummary:
    """What a group task returns: counts and timings (each attempt's status is in its part)."""

    processed: int = 0
    skipped: int = 0
    seconds: float = 0.0


def adopt_environment(environment: dict[str, str]) -> None:
    """Attempt-pool initializer: a worker sees the flow process's environment as it is now.

    Workers fork from a long-lived forkserver whose environment is frozen at its start, so
    credentials or endpoints set later (``AWS_*``) would otherwise be missing in the workers.
    """
    os.environ.clear()
    os.environ.update(environment)


def perf_group(row: dict[str, Any]) -> str:
    """A row's perf_summary group: its environment-server stamp, else its agent name, else ''."""
    stamp = row.get("_ng_environment_server")
    if isinstance(stamp, str) and stamp:
        return stamp
    agent = row.get("agent_ref")
    name = agent.get("name") if isinstance(agent, dict) else None
    return name if isinstance(name, str) else ""


def _lookup_for(ctx: RunContext, attempt: AttemptRef) -> CaptureLookup:
    """The capture lookup for one attempt: discovery already knows which files exist."""

    def lookup(rollout_id: str) -> CaptureFiles | None:
        if rollout_id == attempt.rollout_id:
            has_jsonl, incomplete = attempt.capture is not None, attempt.incomplete
        else:  # not expected (same row, same id), but answer truthfully from storage
            has_jsonl = ctx.capture_dir.child(rollout_id + JSONL_SUFFIX).exists()
            incomplete = ctx.capture_dir.child(rollout_id + MARKER_SUFFIX).exists()
        if not has_jsonl and not incomplete:
            return None
        data = None
        if has_jsonl:
            try:
                data = ctx.capture_dir.child(rollout_id + JSONL_SUFFIX).read_bytes()
            except InputNotFound:
                data = None
        return CaptureFiles(jsonl=data, incomplete=incomplete)

    return lookup


def build_part(ctx: RunContext, attempt: AttemptRef, raw: bytes) -> tuple[dict[str, Any], bytes]:
    """Run the whole per-row evidence pipeline for one attempt: its header and encoded part."""
    started = time.perf_counter()
    collected = collect_row(orjson.loads(raw), _lookup_for(ctx, attempt))
    header: dict[str, Any] = {
        "key": attempt.key,
        "fingerprint": attempt.fingerprint,
        "rollout_id": attempt.rollout_id,
        "repaired": collected.repaired,
    }
    canonical = None
    if collected.rejected is not None:
        line = raw
        header["status"] = "rejected"
        header["reason"] = f"{collected.rejected.kind}: {collected.rejected.message}"
    else:
        canonical = orjson_line(collected.row)
        line = dump_row(collected.row) if canonical is None else canonical
        header["status"] = "ok"
        header["notes"] = row_notes(collected.row, attempt)
    blobs = [line]
    if attempt.source == MAIN:
        atif = _digest_main(ctx, attempt, line, canonical is not None, header)
        if atif is not None:
            blobs.append(atif)
    header["seconds"] = round(time.perf_counter() - started, 6)
    return header, encode_part(header, blobs)


def row_notes(row: dict[str, Any], attempt: AttemptRef) -> list[str]:
    """What the manifest should say about a collected row: no capture id, and its capture gaps.

    The gaps are the evidence 0.7.0 writes into the row (missing or damaged capture, failed
    observation join, ...); repeating their codes per attempt makes every bad input findable
    from the manifest alone.
    """
    notes = [] if attempt.rollout_id is not None else ["no capture rollout id: capture not collected"]
    capture = row.get("ng_model_call_capture")
    gaps = capture.get("gaps") if isinstance(capture, dict) else None
    if isinstance(gaps, list):
        notes.extend(f"gap {gap['code']}" for gap in gaps if isinstance(gap, dict) and isinstance(gap.get("code"), str))
    return notes


def _digest_main(ctx: RunContext, attempt: AttemptRef, line: bytes, canonical: bool, header: dict[str, Any]) -> bytes | None:
    """Health, capability and perf digests plus the ATIF file of a main row, from one parse.

    Every consumer reads what the written file holds (non-finite floats are null), decoded once;
    only a line orjson did not write itself (a rejected input row, a fallback rendering) goes
    through the strict ATIF loader again. None of the consumers modifies the value.
    """
    value = orjson.loads(line)
    header["health"] = evaluate_row(
        value,
        source=ctx.rollouts_out.display,
        line=attempt.out_line,
        ordinal=attempt.out_line - 1,
        ignored=ctx.ignored_checks,
    ).to_json()
    header["capability"] = capability_digest(value)
    header["perf"] = {"group": perf_group(value), "record": summary_input(value.get("ng_perf"))}
    identity = {
        "session_id": ctx.session_id,
        "agent_version": ctx.agent_version,
        "exporter": Exporter(name=EXPORTER_NAME, version=ctx.exporter_version),
    }
    try:
        converted = convert_orjson_row(value, **identity) if canonical else convert_rollout(line, **identity)
    except AtifExportError as exc:
        header["atif"] = {"error": exc.message}
        return None
    header["atif"] = {
        "name": converted.file_name,
        "key": list(converted.key),
        "manifest": converted.manifest_line.decode(),
    }
    return converted.content


def _has_current_part(ctx: RunContext, attempt: AttemptRef) -> bool:
    """Whether the attempt's part exists and was made from the attempt as it is now (its fingerprint)."""
    location = part_location(ctx.run_dir, attempt.source, attempt.line)
    if not location.exists():
        return False
    header, _ = decode_part(location.read_bytes())
    return header.get("fingerprint") == attempt.fingerprint


def _group_rows(ctx: RunContext, attempts: list[AttemptRef]) -> Iterator[tuple[AttemptRef, bytes]]:
    """The group's rows in order, by ranged reads of at most ``READ_CHUNK_BYTES`` (a longer row alone).

    A group is contiguous in one input file, so a few reads cover it while memory stays bounded
    by the chunk, whatever the group size.
    """
    source = ctx.source(attempts[0].source)
    for chunk in _read_chunks(attempts):
        base = chunk[0].offset
        block = source.read_range(base, chunk[-1].offset + chunk[-1].length)
        for attempt in chunk:
            yield attempt, block[attempt.offset - base : attempt.offset - base + attempt.length]


def _read_chunks(attempts: list[AttemptRef]) -> Iterator[list[AttemptRef]]:
    chunk: list[AttemptRef] = []
    for attempt in attempts:
        if chunk and attempt.offset + attempt.length - chunk[0].offset > READ_CHUNK_BYTES:
            yield chunk
            chunk = []
        chunk.append(attempt)
    if chunk:
        yield chunk


def run_group(ctx: RunContext, attempts: list[AttemptRef], check_existing: bool) -> GroupSummary:
    """Process one contiguous group of attempts from one input file; write one part each.

    ``check_existing`` (resume, task retry) keeps the parts already written for this
    fingerprint. Runs in the group task's thread or in a worker process of the attempt pool.
    """
    started = time.perf_counter()
    summary = GroupSummary()
    for attempt, raw in _group_rows(ctx, attempts):
        if check_existing and _has_current_part(ctx, attempt):
            summary.skipped += 1
            continue
        header, part = build_part(ctx, attempt, raw)
        part_location(ctx.run_dir, attempt.source, attempt.line).write_bytes(part)
        summary.processed += 1
    summary.seconds = time.perf_counter() - started
    return summary
