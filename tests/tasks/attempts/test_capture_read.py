"""A capture file that vanishes after discovery, or cannot be read, is never a silent no_records gap."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

import tasks.attempts.group
from evidence import Status
from tasks.attempts.group import run_group
from tasks.attempts.parts import segment_parts
from tasks.discover.refs import AttemptRef
from tasks.discover.scan import discover
from tasks.inputs.shards import Shard
from tasks.storage import Location
from tests.conftest import EXAMPLE_JOB
from tests.tasks.attempts.support import run_context


def _job(tmp_path: Path) -> tuple[Path, Location, Location]:
    job = tmp_path / "job"
    shutil.copytree(EXAMPLE_JOB, job)
    return job, Location(str(job / "rollouts.jsonl")), Location(str(job / "model-calls"))


def _outcome(tmp_path: Path, main: Location, capture_dir: Location, attempt: AttemptRef) -> tuple[str, dict]:
    """The attempt processed alone: its status, and its reason, row and line."""
    ctx = run_context(tmp_path / "run", main, capture_dir)
    run_group(ctx, [attempt], check_existing=False)
    segment = next((tmp_path / "run").rglob("*.seg"))
    ((_, part),) = segment_parts(segment.read_bytes())
    outcome = part.outcome
    return outcome.status, {"reason": outcome.reason, "row": orjson.loads(outcome.line), "line": outcome.line}


def _first_attempt_outcome(tmp_path: Path, damage: str) -> tuple[str, dict]:
    job, main, capture_dir = _job(tmp_path)
    with discover([Shard(main)], capture_dir) as plan:
        attempt = next(a for a in plan.attempts if a.capture is not None)
        capture = job / "model-calls" / attempt.capture.name
        capture.unlink()
        if damage == "unreadable":
            capture.mkdir()  # the name now holds a folder: reading it fails for good
        return _outcome(tmp_path, main, capture_dir, attempt)


@pytest.mark.parametrize(
    ("suffix", "gap"), [(".capture.jsonl", "model_call_capture_unreadable"), (".capture.incomplete", "model_call_capture_incomplete")]
)
def test_a_folder_under_a_capture_name_is_found_as_0_7_0_finds_it(tmp_path: Path, suffix: str, gap: str) -> None:
    """0.7.0's existence checks find a folder as they find a file: a folder in the capture file's
    place cannot be read (the unreadable gap), one in the marker's place marks the capture incomplete."""
    job, main, capture_dir = _job(tmp_path)
    with discover([Shard(main)], capture_dir) as plan:
        first = next(a for a in plan.attempts if a.capture is not None)
    (job / "model-calls" / first.capture.name).unlink()
    (job / "model-calls" / f"{first.rollout_id}{suffix}").mkdir()
    with discover([Shard(main)], capture_dir) as plan:
        attempt = next(a for a in plan.attempts if a.line == first.line and a.source == first.source)
        status, seen = _outcome(tmp_path, main, capture_dir, attempt)
    assert status == Status.OK
    assert seen["row"]["ng_model_call_capture"]["gaps"] == [{"code": gap}]


def test_a_capture_gone_at_read_fails_the_attempt_with_that_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tasks.attempts.group, "backoff_delay", lambda tries: 0.0)
    status, seen = _first_attempt_outcome(tmp_path, "gone")
    assert status == Status.FAILED
    assert seen["reason"].startswith("capture file listed at discovery is gone: ")
    assert "ng_model_call_capture" not in seen["row"]  # the input row, unchanged: no no_records gap invented


def test_a_capture_unreadable_for_good_is_the_unreadable_gap(tmp_path: Path) -> None:
    status, seen = _first_attempt_outcome(tmp_path, "unreadable")
    assert status == Status.OK
    assert seen["row"]["ng_model_call_capture"]["gaps"] == [{"code": "model_call_capture_unreadable"}]
