"""SIGKILL a real CLI run at chosen points, resume it, and compare with an uninterrupted run.

Outputs must be byte-identical except manifest.json and report.html (README, guarantee 3);
parts written before the kill must be reused, not rewritten (README, guarantee 5).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.flows.support import run_outputs, run_stage
from tests.jobgen import JobInfo
from tests.reliability.support import job_args, run_cli, run_dir

pytestmark = pytest.mark.usefixtures("prefect_server")

KILL_POINTS = {
    "during fan-out": "after:*.seg:5",
    "during reduce": "after:rollouts.jsonl:1",
    "right before _SUCCESS": "before:_SUCCESS:1",
    "between _SUCCESS and LATEST": "before:LATEST:1",
}


@pytest.fixture(scope="module")
def uninterrupted(job: JobInfo, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    output = tmp_path_factory.mktemp("uninterrupted")
    return run_outputs(run_stage(rollouts=str(job.rollouts), capture_dir=str(job.capture_dir), output=str(output))["run_dir"])


def _part_inodes(run: Path) -> dict[Path, int]:
    return {p: p.stat().st_ino for p in (run / "attempts").rglob("*.seg") if not p.name.startswith(".tmp-")}


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_killed_run_resumes_to_the_uninterrupted_outputs(
    point: str, job: JobInfo, tmp_path: Path, prefect_server: str, uninterrupted: dict[str, str]
) -> None:
    args = job_args(job, tmp_path)
    # Thread runner for the killed run: the kill point wraps this process's writes (parts included);
    # the resume then runs with the default process runner.
    killed = run_cli(
        prefect_server, [*args, "--run-id", "crashed", "--attempts-per-task", "2", "--task-runner", "thread"], kill_at=KILL_POINTS[point]
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    run = run_dir(tmp_path, "crashed")
    latest = run.parent.parent / "LATEST"
    assert not latest.exists()
    assert (run / "_SUCCESS").exists() == (point == "between _SUCCESS and LATEST")
    written = _part_inodes(run)
    assert written, "the kill points all come after some parts were written"

    resumed = run_cli(prefect_server, [*args, "--resume", "crashed", "--keep-parts"])  # kept, to see which were reused

    assert resumed.returncode == 0, resumed.stderr
    assert run_outputs(str(run)) == uninterrupted
    assert not list(run.rglob(".tmp-*"))
    assert {p: ino for p, ino in _part_inodes(run).items() if p in written} == written, "written parts are reused"
    assert latest.read_text() == "crashed\n"
