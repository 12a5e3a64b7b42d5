"""A capture file that vanishes after discovery, or cannot be read, is never a silent no_records gap."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

import tasks.attempt
from evidence import Status
from tasks.attempt import run_group
from tasks.context import RunContext
from tasks.discover import discover
from tasks.parts import segment_parts
from tasks.shards import Shard
from tasks.storage import Location
from tests.conftest import EXAMPLE_JOB


def _first_attempt_outcome(tmp_path: Path, damage: str) -> tuple[str, dict]:
    job = tmp_path / "job"
    shutil.copytree(EXAMPLE_JOB, job)
    main, capture_dir = Location(str(job / "rollouts.jsonl")), Location(str(job / "model-calls"))
    with discover([Shard(main)], capture_dir) as plan:
        attempt = next(a for a in plan.attempts if a.capture is not None)
        capture = job / "model-calls" / attempt.capture.name
        capture.unlink()
        if damage == "unreadable":
            capture.mkdir()  # the name now holds a folder: reading it fails for good
        ctx = RunContext(
            run_dir=Location(str(tmp_path / "run")), shards=(Shard(main),), capture_dir=capture_dir,
            session_id="s", agent_version="1.0.0", exporter_version="0", ignored_checks=(),
        )
        run_group(ctx, [attempt], check_existing=False)
    segment = next((tmp_path / "run").rglob("*.seg"))
    ((_, part),) = segment_parts(segment.read_bytes())
    outcome = part.outcome
    return outcome.status, {"reason": outcome.reason, "row": orjson.loads(outcome.line), "line": outcome.line}


def test_a_capture_gone_at_read_fails_the_attempt_with_that_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tasks.attempt, "backoff_delay", lambda tries: 0.0)
    status, seen = _first_attempt_outcome(tmp_path, "gone")
    assert status == Status.FAILED
    assert seen["reason"].startswith("capture file listed at discovery is gone: ")
    assert "ng_model_call_capture" not in seen["row"]  # the input row, unchanged: no no_records gap invented


def test_a_capture_unreadable_for_good_is_the_unreadable_gap(tmp_path: Path) -> None:
    status, seen = _first_attempt_outcome(tmp_path, "unreadable")
    assert status == Status.OK
    assert seen["row"]["ng_model_call_capture"]["gaps"] == [{"code": "model_call_capture_unreadable"}]
