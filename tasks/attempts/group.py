"""The work of the fan-out: one group of attempts, each read -> evidence -> written on its own.

Inside a group every attempt is isolated: a content problem becomes evidence or a reported bad
attempt, and only a storage failure escapes (after the storage layer's own retries) to let
Prefect retry the group task (``tasks.attempts.task``), which then redoes only the attempts whose part
is not written yet. No Prefect import here: worker processes of the attempt pool import this
module alone, which keeps their start-up cheap.
"""

from __future__ import annotations

import functools
import gc
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from evidence import AttemptConfig, AttemptInputs, AttemptPart, CaptureFiles, encode_part, process_attempt, unprocessed_attempt
from tasks.attempts.context import RunContext
from tasks.attempts.parts import PartIndex, SegmentWriter, segment_folder
from tasks.discover.refs import MAIN, AttemptRef
from tasks.storage import InputNotFound, PermanentStorageError
from tasks.storage.concurrent import WriteBehind, ordered_prefetch
from tasks.storage.retry import backoff_delay

# A group's rows are read by ranged reads of about this size: few requests, bounded memory.
READ_CHUNK_BYTES = 16 * 1024 * 1024
# Captures on an object store are read ahead of the attempt being processed and parts written
# behind it (latency hidden): at most this many at once each way, and at most this many bytes
# waiting (a larger one alone). Local captures are read when their attempt comes; local
# segments are still written behind, on a thread (written inline, a 2,000-rollout fan-out took
# 4.55 s against 4.50 s, mean of four pairs: no gain either way).
CAPTURE_WINDOW = 8
CAPTURE_BUDGET_BYTES = 32 * 1024 * 1024


@dataclass(slots=True)
class GroupSummary:
    """What a group task returns: counts and timings (each attempt's status is in its part)."""

    processed: int = 0
    skipped: int = 0
    seconds: float = 0.0
    runs: int = 1  # the ``run_group`` calls behind it: the units of work that can run at once

    @classmethod
    def total(cls, summaries: Iterable[GroupSummary]) -> GroupSummary:
        """One summary for many (a group's chunks, a run's groups): everything added up."""
        total = cls(runs=0)
        for summary in summaries:
            total.processed += summary.processed
            total.skipped += summary.skipped
            total.seconds += summary.seconds
            total.runs += summary.runs
        return total


def adopt_environment(environment: dict[str, str]) -> None:
    """Attempt-pool initializer: a worker sees the flow process's environment as it is now.

    Workers fork from a long-lived forkserver whose environment is frozen at its start, so
    credentials or endpoints set later (``AWS_*``) would otherwise be missing in the workers.
    """
    os.environ.clear()
    os.environ.update(environment)


VANISHED_TRIES = 3


def _capture_of(ctx: RunContext, attempt: AttemptRef) -> CaptureFiles | str | None:
    """The attempt's capture files as discovery listed them, or why they cannot be had.

    A capture file that was listed but is missing at read is read again after a backoff (an
    eventually consistent listing, a writer replacing it); if it stays gone the attempt fails
    with that reason instead of silently becoming a ``no_records`` gap. Another permanent read
    error, or a folder where the capture file should be, is the 0.7.0 gap
    ``model_call_capture_unreadable``; a transient error that outlived the storage retries
    propagates, so Prefect retries the group.
    """
    if attempt.capture is None:
        return CaptureFiles(jsonl=None, incomplete=True) if attempt.incomplete else None
    if attempt.capture.folder:
        return CaptureFiles(jsonl=None, incomplete=attempt.incomplete, unreadable=True)
    location = ctx.capture_dir.child(attempt.capture.name)
    for tries in range(1, VANISHED_TRIES + 1):
        try:
            return CaptureFiles(jsonl=location.read_bytes(), incomplete=attempt.incomplete)
        except InputNotFound:
            if tries < VANISHED_TRIES:
                time.sleep(backoff_delay(tries))
        except PermanentStorageError:
            return CaptureFiles(jsonl=None, incomplete=attempt.incomplete, unreadable=True)
    return f"capture file listed at discovery is gone: {location.display}"


def process(config: AttemptConfig, attempt: AttemptRef, inputs: AttemptInputs, gone: str | None) -> AttemptPart:
    """One attempt through the engine, its capture already read (or ``gone``, why it cannot be);
    the part to write. The inputs are handed over: nothing here keeps them."""
    started = time.perf_counter()
    main_line = attempt.out_line if attempt.source == MAIN else None
    if gone is not None:
        outcome = unprocessed_attempt(inputs.take_row(), gone, config, main_line=main_line)
    else:
        outcome = process_attempt(inputs, config, main_line=main_line)
    return AttemptPart(attempt.fingerprint, round(time.perf_counter() - started, 6), outcome)


def _group_rows(ctx: RunContext, attempts: list[AttemptRef]) -> Iterator[tuple[AttemptRef, bytes]]:
    """The group's rows in order, by ranged reads of at most ``READ_CHUNK_BYTES`` (a longer row alone).

    A group is contiguous in one input file, so a few reads cover it while memory stays bounded
    by the chunk, whatever the group size.
    """
    source = ctx.source(attempts[0])
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


@dataclass(frozen=True, slots=True)
class _Fetched:
    """One attempt with what was read for it ahead of processing: its inputs for the engine (None
    when skipped) and why its capture cannot be had (a vanished file)."""

    attempt: AttemptRef
    inputs: AttemptInputs | None
    gone: str | None = None


def _fetch_cost(item: tuple[AttemptRef, bytes]) -> int:
    """Bytes an attempt holds while it waits: its row and its capture."""
    attempt, raw = item
    return len(raw) + (attempt.capture.size if attempt.capture is not None else 0)


def run_group(ctx: RunContext, attempts: list[AttemptRef], check_existing: bool) -> GroupSummary:
    """Process one contiguous group of attempts from one input file; write their parts in segments.

    ``check_existing`` (resume, task retry) keeps the parts already written for this
    fingerprint. A segment is written every ``SEGMENT_PARTS`` attempts (or ``SEGMENT_BYTES``),
    so a crash loses at most that much finished work. Captures on an object store (and the
    resume check) are fetched ahead in a bounded window while attempts are processed in order.
    Runs in the group task's thread or in a worker process of the attempt pool.
    """
    started = time.perf_counter()
    summary = GroupSummary()
    config = ctx.attempt_config

    folder = segment_folder(ctx.run_dir, attempts[0].part_folder)
    existing = PartIndex(folder, range(attempts[0].line, attempts[-1].line + 1)) if check_existing else None

    def fetch(item: tuple[AttemptRef, bytes]) -> _Fetched:
        attempt, raw = item
        if existing is not None and existing.current(attempt) is not None:
            return _Fetched(attempt, None)
        capture = _capture_of(ctx, attempt)
        if isinstance(capture, str):
            return _Fetched(attempt, AttemptInputs(raw, None), capture)
        return _Fetched(attempt, AttemptInputs(raw, capture))

    try:
        rows = _group_rows(ctx, attempts)
        with WriteBehind(window=CAPTURE_WINDOW, budget=CAPTURE_BUDGET_BYTES) as writes:
            segments = SegmentWriter(
                lambda name, data: writes.submit(functools.partial(folder.child(name).write_chunks, lambda: data), sum(map(len, data)))
            )
            remote = not ctx.capture_dir.is_local
            fetches = ordered_prefetch(fetch, rows, window=CAPTURE_WINDOW, remote=remote, cost=_fetch_cost, budget=CAPTURE_BUDGET_BYTES)
            for fetched in fetches:
                if fetched.inputs is None:
                    summary.skipped += 1
                    continue
                segments.add(fetched.attempt, encode_part(process(config, fetched.attempt, fetched.inputs, fetched.gone)))
                summary.processed += 1
            segments.flush()
    finally:
        if not gc.isenabled():  # an attempt-pool worker (tasks.attempts.lifeline): whatever cycles the call left
            gc.collect()
            gc.freeze()  # what outlived the call (modules, schemas, caches) is never scanned again
    summary.seconds = time.perf_counter() - started
    return summary
