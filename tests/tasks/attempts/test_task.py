"""In the attempt pool a group is shared by the workers: chunks of its attempts, each attempt in one."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import tasks.attempts.task
from evidence import AttemptOutcome
from tasks.attempts.context import RunContext
from tasks.attempts.group import GroupSummary, run_group
from tasks.attempts.parts import segment_parts
from tasks.attempts.task import process_group
from tasks.discover.refs import AttemptRef
from tasks.discover.scan import discover
from tasks.storage import StorageError
from tests.tasks.attempts.support import run_context


class RecordingPool(ThreadPoolExecutor):
    """An attempt pool of two threads that records the lines of each chunk it is given."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.chunks: list[list[int]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.chunks.append([attempt.line for attempt in args[1]])
        return super().submit(fn, *args, **kwargs)


def _job(out: Path) -> tuple[RunContext, list[AttemptRef]]:
    ctx = run_context(out)
    with discover(list(ctx.shards), ctx.capture_dir) as plan:
        return ctx, list(plan.attempts)


def _parts(out: Path) -> dict[int, AttemptOutcome]:
    return {line: part.outcome for p in sorted(out.rglob("*.seg")) for line, part in segment_parts(p.read_bytes())}


def test_a_group_goes_to_the_pool_in_chunks_that_make_the_same_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tasks.attempts.task, "POOL_CHUNK", 10)
    ctx, attempts = _job(tmp_path / "chunked")
    with RecordingPool() as pool:
        summary = process_group.fn(ctx, attempts, pool)
    whole_ctx, _ = _job(tmp_path / "whole")
    whole = run_group(whole_ctx, attempts, check_existing=False)

    lines = [attempt.line for attempt in attempts]
    assert len(lines) > 20
    assert pool.chunks == [lines[i : i + 10] for i in range(0, len(lines), 10)]
    assert (summary.processed, summary.skipped) == (whole.processed, whole.skipped) == (len(lines), 0)
    assert summary.seconds > 0
    assert _parts(tmp_path / "chunked") == _parts(tmp_path / "whole")


def test_a_resumed_group_goes_to_the_pool_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its check for parts already written lists the source's folder once per call, not per chunk."""
    monkeypatch.setattr(tasks.attempts.task, "POOL_CHUNK", 10)
    ctx, attempts = _job(tmp_path)
    with RecordingPool() as pool:
        summary = process_group.fn(dataclasses.replace(ctx, resume=True), attempts, pool)
    assert pool.chunks == [[attempt.line for attempt in attempts]]
    assert summary.processed == len(attempts)


class FailingFirstChunk(ThreadPoolExecutor):
    """The first chunk fails at once with a storage error; every other chunk takes a while."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.submitted = 0
        self.finished: list[int] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        index, attempts = self.submitted, args[1]
        self.submitted += 1

        def chunk() -> GroupSummary:
            if index == 0:
                raise StorageError("s3://b/x", "gone")
            time.sleep(0.3)
            self.finished.append(index)
            return GroupSummary(processed=len(attempts))

        return super().submit(chunk)


def test_a_failed_chunk_fails_the_group_only_once_every_chunk_has_ended(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A retry of the task must never run beside a chunk of the same group still writing."""
    monkeypatch.setattr(tasks.attempts.task, "POOL_CHUNK", 10)
    ctx, attempts = _job(tmp_path)
    with FailingFirstChunk() as pool:
        with pytest.raises(StorageError):
            process_group.fn(ctx, attempts, pool)
        assert pool.submitted > 2
        assert sorted(pool.finished) == list(range(1, pool.submitted))
