"""Fault injection on a real S3 endpoint: moto behind a proxy that fails a share of requests.

botocore's own retries are switched off for the faulty run so every injected error reaches
evidence-stage's storage layer (s3fs still retries SlowDown and resets a few times itself).
Each run must complete with outputs byte-identical to the fault-free run's: no row lost or
duplicated, no fault turned into evidence.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest
from prefect import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

from flows.params.stage import StageParams
from flows.stage import stage_flow
from tasks.storage.retry import ATTEMPTS, RETRY_COUNTER
from tests.flows.support import run_outputs, tree_digest
from tests.jobgen import JobInfo
from tests.reliability.faultproxy import FaultPlan, FaultProxy

pytestmark = pytest.mark.usefixtures("prefect_server")

EVERYWHERE = {"read": 0.12, "list": 0.12, "write": 0.12}
SCENARIOS: dict[str, Callable[[JobInfo], FaultPlan]] = {
    # A run makes only a handful of LISTs: its first one always fails, so lists are covered every time.
    "5xx on reads, lists and writes": lambda job: FaultPlan(fractions=EVERYWHERE, fail_first_of_kind={"list": 1}, seed=1),
    "5xx and connection resets": lambda job: FaultPlan(fractions=EVERYWHERE, resets=True, fail_first_of_kind={"list": 1}, seed=2),
    "one capture fails past the retry budget": lambda job: FaultPlan(fail_first={_first_capture(job): ATTEMPTS + 2}),
}
NO_SDK_RETRIES = {"config_kwargs": {"retries": {"total_max_attempts": 1}}}


def _first_capture(job: JobInfo) -> str:
    """The request path of one capture file (read once per run, by its attempt)."""
    return "/jobs/job/model-calls/" + min(p.name for p in job.capture_dir.glob("*.capture.jsonl"))


def _fields(output: str, **extra: Any) -> dict[str, Any]:
    job = "s3://jobs/job"
    return {"rollouts": f"{job}/rollouts.jsonl", "capture_dir": f"{job}/model-calls", "output": output, "job_id": "job", **extra}


async def _task_runs(flow_run_id: UUID) -> dict[str, int]:
    """Task name -> total Prefect runs of that name (a retried task run counts twice)."""
    async with get_client() as client:
        runs = await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    totals: dict[str, int] = {}
    for run in runs:
        name = run.name.rsplit("-", 1)[0]
        totals[name] = totals.get(name, 0) + max(run.run_count, 1)
    return totals


@pytest.fixture
def clean_run(s3: str, job: JobInfo) -> dict[str, str]:
    import s3fs

    fs = s3fs.S3FileSystem()
    fs.mkdir("jobs")
    fs.mkdir("results")
    fs.put(str(job.root) + "/", "jobs/job", recursive=True)
    return run_outputs(stage_flow(StageParams(**_fields("s3://results/clean")))["run_dir"])


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_run_under_storage_faults_equals_fault_free_run(scenario: str, s3: str, clean_run: dict[str, str], job: JobInfo) -> None:
    plan = SCENARIOS[scenario](job)
    inputs = tree_digest("s3://jobs/job")
    retries_before = RETRY_COUNTER.count
    with FaultProxy(s3, plan) as proxy:
        state = stage_flow(
            StageParams(
                **_fields("s3://results/faulty", storage_options={"endpoint_url": proxy.url, **NO_SDK_RETRIES}, attempts_per_task=4),
                task_runner="thread",  # storage retries are counted in this process
            ),
            return_state=True,
        )
    result = state.result()
    retries = RETRY_COUNTER.count - retries_before
    task_runs = asyncio.run(_task_runs(state.state_details.flow_run_id))
    groups = -(-result["counts"]["attempts"] // 4)
    print(
        f"\n[{scenario}] attempts={result['counts']['attempts']} requests={dict(plan.requests)} "
        f"faults injected={plan.total_injected} {dict(plan.injected)} storage retries={retries} "
        f"process-attempts task runs={task_runs.get('process-attempts')} for {groups} groups"
    )
    assert run_outputs(result["run_dir"]) == clean_run, "rows lost, duplicated or changed by faults"
    assert tree_digest("s3://jobs/job") == inputs
    assert plan.total_injected > 0
    assert retries > 0
    if plan.fail_first:
        assert task_runs["process-attempts"] > groups, "the group that outlived its storage retries is retried by Prefect"
    else:
        assert {key.split()[0] for key in plan.injected} == {"read", "list", "write"}
