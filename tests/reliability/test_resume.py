"""--resume semantics (README, guarantee 5) through the real CLI, and in-process repairs."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from tasks.attempts.parts import segment_parts
from tests.flows.support import run_outputs, run_stage, tree_digest
from tests.jobgen import JobInfo
from tests.reliability.support import error_lines, job_args, run_cli, run_dir

pytestmark = pytest.mark.usefixtures("prefect_server")


def _fields(job: JobInfo, output: Path, **extra: object) -> dict[str, object]:
    return {"rollouts": str(job.rollouts), "capture_dir": str(job.capture_dir), "output": str(output), **extra}


def _parts(run: Path) -> dict[str, int]:
    """Every part segment by relative path -> inode (a rewrite makes a new inode)."""
    return {str(p.relative_to(run)): p.stat().st_ino for p in sorted((run / "attempts").rglob("*.seg"))}


def test_resume_of_complete_run_is_a_noop_that_says_so(job: JobInfo, tmp_path: Path, prefect_server: str) -> None:
    run_stage(**_fields(job, tmp_path, run_id="done"))
    run = run_dir(tmp_path, "done")
    before = tree_digest(str(run))
    result = run_cli(prefect_server, [*job_args(job, tmp_path), "--resume", "done"])
    assert result.returncode == 0, result.stderr
    assert "already complete" in result.stdout
    assert tree_digest(str(run)) == before


def test_existing_run_id_without_resume_is_one_line_error(job: JobInfo, tmp_path: Path, prefect_server: str) -> None:
    run_stage(**_fields(job, tmp_path, run_id="taken"))
    run = run_dir(tmp_path, "taken")
    before = tree_digest(str(run))
    result = run_cli(prefect_server, [*job_args(job, tmp_path), "--run-id", "taken"])
    assert result.returncode == 2
    (line,) = error_lines(result.stderr)
    assert "run id already exists" in line
    assert "--resume" in line
    assert tree_digest(str(run)) == before


def test_resume_with_conflicting_parameters_is_an_error(job: JobInfo, tmp_path: Path, prefect_server: str) -> None:
    run_stage(**_fields(job, tmp_path, run_id="mine", session_id="s1"))
    run = run_dir(tmp_path, "mine")
    (run / "_SUCCESS").unlink()
    before = tree_digest(str(run))
    result = run_cli(prefect_server, [*job_args(job, tmp_path), "--resume", "mine", "--session-id", "s2"])
    assert result.returncode == 2
    (line,) = error_lines(result.stderr)
    assert "session_id" in line
    assert "'s1'" in line
    assert "'s2'" in line
    assert tree_digest(str(run)) == before


def test_resume_of_unknown_run_is_an_error(job: JobInfo, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="no such run to resume"):
        run_stage(**_fields(job, tmp_path, resume="never-started"))


def _stale_first_entry(segment: Path) -> None:
    """Give the segment's first part another fingerprint, as if its input had changed."""
    magic, index, body = segment.read_bytes().split(b"\n", 2)
    entries = orjson.loads(index)
    entries[0][1] = "0" * 64
    segment.write_bytes(b"\n".join([magic, orjson.dumps(entries), body]))


def test_resume_skips_matching_parts_and_redoes_the_rest(job: JobInfo, tmp_path: Path) -> None:
    reference = run_outputs(run_stage(**_fields(job, tmp_path / "ref", run_id="ref"))["run_dir"])
    run_stage(**_fields(job, tmp_path / "out", run_id="partial", attempts_per_task=3, keep_parts=True))
    run = run_dir(tmp_path / "out", "partial")
    segments = sorted((run / "attempts").rglob("*.seg"))
    attempts = sum(1 for segment in segments for _ in segment_parts(segment.read_bytes()))
    removed, stale, damaged = segments[1::4], segments[2], segments[3]
    for segment in removed:
        segment.unlink()
    _stale_first_entry(stale)
    damaged.write_bytes(damaged.read_bytes()[:-10])
    for name in ("_SUCCESS", "rollouts.jsonl", "perf_summary.json", "health/quality_summary.json"):
        (run / name).unlink()
    redone = {str(damaged.relative_to(run))}
    kept = {k: v for k, v in _parts(run).items() if k not in redone}
    result = run_stage(**_fields(job, tmp_path / "out", resume="partial", keep_parts=True))
    assert result["already_complete"] is False
    after = _parts(run)
    assert {k: after[k] for k in kept} == kept, "segments of matching parts must be kept, not rewritten"
    assert len(after) > len(kept), "the removed, stale and damaged parts are written again"
    assert (run / "_SUCCESS").exists()
    assert run_outputs(str(run)) == reference
    manifest = orjson.loads((run / "manifest.json").read_bytes())
    assert manifest["run"]["resumed"] is True
    assert manifest["counts"]["attempts"] == attempts
    assert (tmp_path / "out" / run.parts[-3] / "LATEST").read_text() == "partial\n"


def test_resume_discards_temp_files_of_the_killed_process(job: JobInfo, tmp_path: Path) -> None:
    run_stage(**_fields(job, tmp_path, run_id="tmpfiles", keep_parts=True))  # stands for a run killed before publishing
    run = run_dir(tmp_path, "tmpfiles")
    reference = run_outputs(str(run))
    (run / "_SUCCESS").unlink()
    (run / ".tmp-abc123.part").write_bytes(b"half a rollouts file")
    (run / "attempts" / "main" / ".tmp-def456.part").write_bytes(b"half a part")
    run_stage(**_fields(job, tmp_path, resume="tmpfiles"))
    assert not list(run.rglob(".tmp-*"))
    assert run_outputs(str(run)) == reference
    assert os.path.exists(run / "_SUCCESS")


def test_resumed_subset_run_stays_a_subset(job: JobInfo, tmp_path: Path) -> None:
    """The selection comes from the interrupted run, not from the resume's own arguments."""
    first = run_stage(**_fields(job, tmp_path, run_id="some", rollout_glob="0-*"))
    run = run_dir(tmp_path, "some")
    chosen = orjson.loads((run / "manifest.json").read_bytes())["counts"]["attempts"]
    (run / "_SUCCESS").unlink()
    run_stage(**_fields(job, tmp_path, resume="some"))
    manifest = orjson.loads((run / "manifest.json").read_bytes())
    assert manifest["run"]["scope"] == "subset"
    assert manifest["counts"]["attempts"] == chosen < job.main_rows
    assert not (tmp_path / run.parts[-3] / "LATEST").exists(), f"a subset run never moves LATEST ({first['run_id']})"


def test_missing_capture_dir_claims_no_run_directory(job: JobInfo, tmp_path: Path, prefect_server: str) -> None:
    result = run_cli(
        prefect_server, ["--rollouts", str(job.rollouts), "--capture-dir", str(tmp_path / "typo"), "--output", str(tmp_path / "out")]
    )
    assert result.returncode == 2
    (line,) = error_lines(result.stderr)
    assert "capture directory not found" in line
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()
