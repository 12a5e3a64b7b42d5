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

from evidence import AttemptConfig, AttemptPart, CaptureFiles, encode_part, process_attempt, unprocessed_attempt
from tasks.context import RunContext
from tasks.discover import MAIN, AttemptRef
from tasks.parts import current_part, part_location
from tasks.retry import call_with_retries
from tasks.storage import InputNotFound, Location, PermanentStorageError, TransientStorageError


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


class _Vanished(TransientStorageError):
    """A listed capture file is missing at read: retried like a transient error, then reported."""


VANISHED_TRIES = 3


def _capture_of(ctx: RunContext, attempt: AttemptRef) -> CaptureFiles | str | None:
    """The attempt's capture files as discovery listed them, or why they cannot be had.

    A capture file that was listed but is gone at read is retried as a transient error (an
    eventually consistent listing, a writer replacing it); if it stays gone the attempt fails
    with that reason instead of silently becoming a ``no_records`` gap. A permanent read error
    is the 0.7.0 gap ``model_call_capture_unreadable``.
    """
    if attempt.capture is None:
        return CaptureFiles(jsonl=None, incomplete=True) if attempt.incomplete else None
    location = ctx.capture_dir.child(attempt.capture.name)
    try:
        data = call_with_retries(location.url, lambda: _read_present(location), attempts=VANISHED_TRIES)
    except _Vanished:
        return f"capture file listed at discovery is gone: {location.display}"
    except PermanentStorageError:
        return CaptureFiles(jsonl=None, incomplete=attempt.incomplete, unreadable=True)
    return CaptureFiles(jsonl=data, incomplete=attempt.incomplete)


def _read_present(location: Location) -> bytes:
    try:
        return location.read_bytes()
    except InputNotFound as exc:
        raise _Vanished(location.url, exc.message) from exc


def process(ctx: RunContext, config: AttemptConfig, attempt: AttemptRef, raw: bytes) -> AttemptPart:
    """One attempt: its capture read, then the engine; the part to write."""
    started = time.perf_counter()
    main_line = attempt.out_line if attempt.source == MAIN else None
    capture = _capture_of(ctx, attempt)
    if isinstance(capture, str):
        outcome = unprocessed_attempt(raw, capture, config, main_line=main_line)
    else:
        outcome = process_attempt(raw, capture, config, main_line=main_line)
    return AttemptPart(attempt.fingerprint, round(time.perf_counter() - started, 6), outcome)


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
    config = ctx.attempt_config
    for attempt, raw in _group_rows(ctx, attempts):
        location = part_location(ctx.run_dir, attempt.source, attempt.line)
        if check_existing and current_part(location, attempt.fingerprint):
            summary.skipped += 1
            continue
        location.write_bytes(encode_part(process(ctx, config, attempt, raw)))
        summary.processed += 1
    summary.seconds = time.perf_counter() - started
    return summary
