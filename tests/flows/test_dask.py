"""The Dask task runner on a real distributed.LocalCluster gives the thread runner's outputs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from distributed import Client, LocalCluster, get_task_stream

from tasks.attempts.context import RunContext
from tasks.attempts.group import GroupSummary
from tasks.discover.refs import AttemptRef
from tasks.inputs.naming import job_id_for
from tests.conftest import EXAMPLE_JOB
from tests.flows.support import local_path, run_outputs, run_stage

pytestmark = pytest.mark.usefixtures("prefect_server")


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as local:
        yield local


def test_dask_cluster_outputs_equal_thread_runner_outputs(cluster: LocalCluster, tmp_path: Path) -> None:
    job = {"rollouts": str(EXAMPLE_JOB / "rollouts.jsonl"), "capture_dir": str(EXAMPLE_JOB / "model-calls"), "attempts_per_task": 4}
    threaded = run_stage(**job, output=str(tmp_path / "thread"), task_runner="thread", job_id="example")
    with Client(cluster) as client, get_task_stream(client) as stream:
        on_dask = run_stage(
            **job, output=str(tmp_path / "dask"), task_runner="dask", dask_address=cluster.scheduler_address, job_id="example"
        )

    assert run_outputs(on_dask["run_dir"]) == run_outputs(threaded["run_dir"])
    assert {"rollouts.jsonl", "perf_summary.json", "health/quality_summary.json", "atif/manifest.jsonl"} <= set(
        run_outputs(on_dask["run_dir"])
    )
    assert (local_path(on_dask["run_dir"]) / "_SUCCESS").exists()
    worker_addresses = set(cluster.scheduler_info["workers"])
    ran_on = {record["worker"] for record in stream.data}
    assert stream.data
    assert ran_on <= worker_addresses


HANG_S = 300
"""How long the cluster's first group hangs once its parts are written; the test kills its worker long before."""


def _hang_first_group(marker: str) -> None:
    """Run in each Dask worker: the first group task of the whole cluster writes its parts, then
    records its worker's pid in ``marker`` (created exclusively: one winner) and hangs.

    Patched where it is defined: the group task's function reaches Dask by value (its module
    name holds the Prefect task), and its reference to ``run_group`` is resolved on arrival.
    """
    import tasks.attempts.group

    real = tasks.attempts.group.run_group

    def run_group(ctx: RunContext, attempts: list[AttemptRef], check_existing: bool) -> GroupSummary:
        summary = real(ctx, attempts, check_existing)
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return summary
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        time.sleep(HANG_S)
        return summary

    tasks.attempts.group.run_group = run_group


def _kill_when_marked(marker: Path, killed: list[int]) -> None:
    """SIGKILL the worker process whose pid appears in ``marker`` (waits up to a minute for it)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if marker.exists() and (pid := marker.read_text()):
            os.kill(int(pid), signal.SIGKILL)
            killed.append(int(pid))
            return
        time.sleep(0.05)


def test_a_worker_killed_after_writing_its_parts_loses_nothing(tmp_path: Path) -> None:
    """kill -9 of a Dask worker holding a group task (its segment already written): Dask runs the
    group again on a live worker, the reduce reads the two segments of those lines as one, and
    the run publishes the thread runner's outputs."""
    job = {
        "rollouts": str(EXAMPLE_JOB / "rollouts.jsonl"),
        "capture_dir": str(EXAMPLE_JOB / "model-calls"),
        "attempts_per_task": 4,
        "job_id": "example",
    }
    threaded = run_stage(**job, output=str(tmp_path / "thread"))
    marker, killed = tmp_path / "hung-worker", []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as local, Client(local) as client:
        client.run(_hang_first_group, str(marker))
        killer = threading.Thread(target=_kill_when_marked, args=(marker, killed), daemon=True)
        killer.start()
        on_dask = run_stage(**job, output=str(tmp_path / "dask"), task_runner="dask", dask_address=local.scheduler_address)
        killer.join()

    assert killed, "no group task hung: the worker was never killed"
    assert run_outputs(on_dask["run_dir"]) == run_outputs(threaded["run_dir"])
    assert on_dask["counts"]["by_status"] == threaded["counts"]["by_status"]
    assert (local_path(on_dask["run_dir"]) / "_SUCCESS").exists()
    assert not (local_path(on_dask["run_dir"]) / "attempts").exists()


def test_local_dask_cluster_from_dask_workers_gives_the_same_outputs(tmp_path: Path) -> None:
    job = {
        "rollouts": str(EXAMPLE_JOB / "rollouts.jsonl"),
        "capture_dir": str(EXAMPLE_JOB / "model-calls"),
        "attempts_per_task": 8,
        "job_id": "example",
    }
    threaded = run_stage(**job, output=str(tmp_path / "thread"))
    on_dask = run_stage(**job, output=str(tmp_path / "dask"), task_runner="dask", dask_workers=2)
    assert run_outputs(on_dask["run_dir"]) == run_outputs(threaded["run_dir"])


def test_relative_paths_reach_workers_in_another_directory_as_absolute_urls(
    dask_cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paths relative to the caller name the same files for ``dask worker`` processes started elsewhere."""
    shutil.copytree(EXAMPLE_JOB, tmp_path / "jobs" / "example")
    monkeypatch.chdir(tmp_path)
    result = run_stage(
        rollouts="jobs/example/rollouts.jsonl",
        capture_dir="jobs/example/model-calls",
        output="out",
        task_runner="dask",
        dask_address=dask_cluster,
        attempts_per_task=8,
    )
    run_dir = tmp_path / "out" / job_id_for(str(tmp_path / "jobs" / "example" / "rollouts.jsonl")) / "runs" / result["run_id"]
    assert result["run_dir"] == f"file://{run_dir}"
    assert (run_dir / "_SUCCESS").exists()
    recorded = json.loads((run_dir / "params.json").read_text())
    assert (recorded["rollouts"], recorded["capture_dir"]) == (
        f"file://{tmp_path}/jobs/example/rollouts.jsonl",
        f"file://{tmp_path}/jobs/example/model-calls",
    )
