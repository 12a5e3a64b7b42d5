"""Prefect artifacts of a job run and a batch run, read back through the Prefect client."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterType, FlowRunFilter, FlowRunFilterId

from flows.batch import batch_flow
from flows.params.batch import BatchParams
from flows.params.stage import StageParams
from flows.stage import stage_flow
from tasks.publish.links import job_artifact_key
from tests.conftest import EXAMPLE_JOB, REPO, SAMPLES

pytestmark = pytest.mark.usefixtures("prefect_server")

OPERATIONS_KEYS = re.compile(r"\| key \| what it shows \|\n(?:\|[^\n]*\n)+")
"""OPERATIONS.md's table of a run's artifact keys."""


def artifacts_of(flow_run_id: UUID) -> dict[str, Any]:
    """The flow run's keyed artifacts (latest version of each key), by key."""
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
        progress = client.read_artifacts(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])),
            artifact_filter=ArtifactFilter(type=ArtifactFilterType(any_=["progress"])),
        )
    by_key = {a.key: a for a in sorted(found, key=lambda a: a.updated or a.created) if a.key}
    by_key.update({f"progress:{a.id}": a for a in progress})
    return by_key


def test_job_run_has_verdict_table_perf_markdown_links_and_finished_progress(tmp_path: Path) -> None:
    params = StageParams(
        rollouts=str(EXAMPLE_JOB / "rollouts.jsonl"),
        capture_dir=str(EXAMPLE_JOB / "model-calls"),
        output=str(tmp_path),
        attempts_per_task=6,
    )
    state = stage_flow(params, return_state=True)
    result = state.result()
    job_id = result["run_dir"].rstrip("/").split("/")[-3]
    artifacts = {
        key.removesuffix(f"-{job_artifact_key('', job_id)}"): a for key, a in artifacts_of(state.state_details.flow_run_id).items()
    }
    assert "evidence-stage-verdicts" in artifacts
    assert "evidence-stage-progress" in artifacts

    verdicts = artifacts["evidence-stage-verdicts"]
    assert verdicts.type == "table"
    table = json.loads(verdicts.data) if isinstance(verdicts.data, str) else verdicts.data
    assert {row["verdict"]: row["rollouts"] for row in table} == result["counts"]["verdicts"]
    perf = artifacts["evidence-stage-perf-summary"]
    assert perf.type == "markdown"
    assert perf.data.strip()
    scores = artifacts["evidence-stage-scores"]
    assert scores.type == "markdown"
    assert scores.data.startswith("## Scores: raw against clean\n")
    assert "| claude_code_agent | claude_code_agent | mean/reward | 0.5 | \u2014 |" in scores.data  # every rollout masked
    assert "| 4-0 | unhealthy | agent_turn_hollow (4) |" in scores.data
    assert result["run_dir"] in artifacts["evidence-stage-run-dir"].data
    report = artifacts["evidence-stage-report"]  # a web page cannot open file:// links: the URL as text, and what works (issue 35)
    assert report.type == "markdown"
    assert f"`file://{tmp_path}/" in report.data
    assert "](" not in report.data
    assert "paste file://" in report.description
    assert "address bar" in report.description
    assert all(a.description for key, a in artifacts.items() if not key.startswith("progress:")), sorted(artifacts)
    documented = set(re.findall(r"`(evidence-stage-[a-z-]+)`", OPERATIONS_KEYS.search((REPO / "OPERATIONS.md").read_text()).group(0)))
    published = {key for key in artifacts if not key.startswith("progress:")}
    assert published == documented - {"evidence-stage-gate"}  # OPERATIONS' table is complete (issue 43); no gate set here
    progress = [a for key, a in artifacts.items() if key.startswith("progress:")]
    assert [a.data for a in progress] == [100.0]


def test_s3_outputs_link_to_presigned_urls_a_browser_opens(s3: str, tmp_path: Path) -> None:
    import httpx
    import s3fs

    s3fs.S3FileSystem().mkdir("results")
    params = StageParams(
        rollouts=str(EXAMPLE_JOB / "rollouts.jsonl"),
        capture_dir=str(EXAMPLE_JOB / "model-calls"),
        output="s3://results/out",
        attempts_per_task=6,
    )
    state = stage_flow(params, return_state=True)
    job_id = state.result()["run_dir"].rstrip("/").split("/")[-3]
    artifacts = artifacts_of(state.state_details.flow_run_id)
    report = artifacts[job_artifact_key("evidence-stage-report", job_id)]
    url = re.search(r"\((http[^)]+)\)", report.data).group(1)
    assert "X-Amz-Algorithm=AWS4-HMAC-SHA256" in url
    assert "X-Amz-Signature=" in url
    assert "valid until" in report.description
    page = httpx.get(url, timeout=30)
    assert page.status_code == 200
    assert b"<html" in page.content.lower()
    assert page.headers["content-type"] == "text/html; charset=utf-8"  # shown by a browser, not downloaded (issue 35)
    assert "s3://results/out/" in artifacts[job_artifact_key("evidence-stage-run-dir", job_id)].data
    run_dir = state.result()["run_dir"].removeprefix("s3://")
    names = ("manifest.json", "rollouts.jsonl", "_SUCCESS", "viewer/rollouts-00000.js", "tables/rollouts.parquet")
    types = {name: s3fs.S3FileSystem().info(f"{run_dir}/{name}")["ContentType"] for name in names}
    assert types == {
        "manifest.json": "application/json",
        "rollouts.jsonl": "application/x-ndjson",
        "_SUCCESS": "text/plain; charset=utf-8",
        "viewer/rollouts-00000.js": "text/javascript; charset=utf-8",  # the viewer loads it as a script (issue 43)
        "tables/rollouts.parquet": "application/vnd.apache.parquet",
    }


def test_batch_run_has_a_job_table_and_a_summary_link(tmp_path: Path) -> None:
    shutil.copytree(SAMPLES / "realistic_job", tmp_path / "jobs" / "one")
    state = batch_flow(BatchParams(prefix=str(tmp_path / "jobs"), output=str(tmp_path / "out")), return_state=True)
    summary = state.result()
    artifacts = artifacts_of(state.state_details.flow_run_id)

    jobs = artifacts["evidence-stage-batch"]
    table = json.loads(jobs.data) if isinstance(jobs.data, str) else jobs.data
    assert [(row["job_id"], row["status"]) for row in table] == [(summary["jobs"][0]["job_id"], "processed")]
    assert f"`file://{tmp_path}/out/batches/" in artifacts["evidence-stage-batch-summary"].data  # as text: a web page cannot open it
    assert all(a.description for a in artifacts.values())
