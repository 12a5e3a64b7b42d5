"""A group's rows are read in bounded chunks; the chunk size never changes a part."""

from __future__ import annotations

from pathlib import Path

import pytest

import tasks.attempt
from evidence import AttemptOutcome
from tasks.attempt import run_group
from tasks.context import RunContext
from tasks.discover import discover
from tasks.parts import segment_parts
from tasks.shards import Shard
from tasks.storage import Location
from tests.conftest import EXAMPLE_JOB


def _parts_of_one_group(out: Path) -> tuple[int, dict[int, AttemptOutcome]]:
    main, capture_dir = Location(str(EXAMPLE_JOB / "rollouts.jsonl")), Location(str(EXAMPLE_JOB / "model-calls"))
    plan = discover([Shard(main)], capture_dir)
    ctx = RunContext(
        run_dir=Location(str(out)), shards=(Shard(main),), capture_dir=capture_dir,
        session_id="s", agent_version="1.0.0", exporter_version="0.0.0", ignored_checks=(),
    )
    with plan:
        summary = run_group(ctx, list(plan.attempts), check_existing=False)
    parts = {line: part.outcome for p in sorted(out.rglob("*.seg")) for line, part in segment_parts(p.read_bytes())}
    return summary.processed, parts


def test_chunked_reads_give_the_same_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _parts_of_one_group(tmp_path / "whole")
    monkeypatch.setattr(tasks.attempt, "READ_CHUNK_BYTES", 1)  # every row is its own read
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
