"""A group's rows are read in bounded chunks; the chunk size never changes a part."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import tasks.attempts.group
from evidence import AttemptOutcome
from tasks.attempts.group import run_group
from tasks.attempts.parts import read_parts, segment_folder, segment_parts
from tasks.discover.refs import MAIN
from tasks.discover.scan import discover
from tests.tasks.attempts.support import run_context


def _parts_of_one_group(out: Path) -> tuple[int, dict[int, AttemptOutcome]]:
    ctx = run_context(out)
    plan = discover(list(ctx.shards), ctx.capture_dir)
    with plan:
        summary = run_group(ctx, list(plan.attempts), check_existing=False)
    parts = {line: part.outcome for p in sorted(out.rglob("*.seg")) for line, part in segment_parts(p.read_bytes())}
    return summary.processed, parts


def test_chunked_reads_give_the_same_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _parts_of_one_group(tmp_path / "whole")
    monkeypatch.setattr(tasks.attempts.group, "READ_CHUNK_BYTES", 1)  # every row is its own read
    chunked = _parts_of_one_group(tmp_path / "chunked")
    assert whole[0] == len(whole[1]) > 1
    assert chunked == whole


def test_a_worker_group_collects_its_cycles_and_freezes_what_outlives_it(tmp_path: Path) -> None:
    """In an attempt-pool worker (no automatic collector), the next group's collection scans only
    what that group made: the survivors of this one (modules, caches) are frozen."""
    import gc

    gc.collect()
    gc.disable()
    try:
        _parts_of_one_group(tmp_path)
        assert gc.get_freeze_count() > 0
        assert gc.collect() == 0  # nothing the group made was left for the collector
    finally:
        gc.unfreeze()
        gc.enable()


def test_a_resumed_group_never_replaces_a_segment_whose_other_parts_are_current(tmp_path: Path) -> None:
    """Only the changed attempts are redone; their new segment, though it spans the same first and
    last line, must not take the place of the old one that still holds every other current part."""
    ctx = run_context(tmp_path)
    with discover(list(ctx.shards), ctx.capture_dir) as plan:
        attempts = [attempt for attempt in plan.attempts if attempt.source == MAIN]
    run_group(ctx, attempts, check_existing=False)
    (segment,) = (tmp_path / "attempts" / MAIN).glob("*.seg")
    magic, index, body = segment.read_bytes().split(b"\n", 2)
    entries = orjson.loads(index)
    for changed in (entries[0], entries[-1]):  # as if these two inputs had changed since
        changed[1] = "0" * 64
    segment.write_bytes(b"\n".join([magic, orjson.dumps(entries), body]))

    summary = run_group(ctx, attempts, check_existing=True)

    assert (summary.processed, summary.skipped) == (2, len(attempts) - 2)
    parts = list(read_parts(segment_folder(ctx.run_dir, MAIN), attempts))
    assert [attempt.line for attempt, _, _ in parts] == [attempt.line for attempt in attempts]
