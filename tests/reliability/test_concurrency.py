"""Two runs of one job at once: independent run directories, LATEST whole and on one of them."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tasks.storage import Location
from tests.conftest import REPO
from tests.flows.support import run_outputs
from tests.jobgen import JobInfo
from tests.reliability.support import CLI_TIMEOUT_S, cli_command, cli_env, job_args, run_dir

CLAIMERS = 8


def test_two_concurrent_runs_of_one_job_both_complete(job: JobInfo, tmp_path: Path, prefect_server: str) -> None:
    env = cli_env(prefect_server)
    processes = [
        subprocess.Popen(
            cli_command([*job_args(job, tmp_path), "--run-id", run_id]), cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for run_id in ("left", "right")
    ]
    for process in processes:
        _, stderr = process.communicate(timeout=CLI_TIMEOUT_S)
        assert process.returncode == 0, stderr.decode()
    left, right = run_dir(tmp_path, "left"), run_dir(tmp_path, "right")
    assert (left / "_SUCCESS").exists()
    assert (right / "_SUCCESS").exists()
    assert run_outputs(str(left)) == run_outputs(str(right))
    assert (left.parent.parent / "LATEST").read_text() in ("left\n", "right\n")


@pytest.mark.parametrize("where", ["local", "s3"])
def test_exactly_one_of_many_concurrent_claims_wins(where: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if where == "s3":
        request.getfixturevalue("s3")
        import s3fs

        s3fs.S3FileSystem().mkdir("claims")
        target = Location("s3://claims/job/runs/r1/params.json")
    else:
        target = Location(str(tmp_path / "job" / "runs" / "r1" / "params.json"))
    with ThreadPoolExecutor(CLAIMERS) as pool:
        outcomes = list(pool.map(lambda n: target.write_new(f"claimer {n}".encode()), range(CLAIMERS)))
    assert outcomes.count(True) == 1
    assert target.read_bytes() == f"claimer {outcomes.index(True)}".encode()
