"""The quality gate on a real Prefect server: state, event, exit code, LATEST and the sweep."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from prefect import get_client
from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter

from flows.batch import batch_flow
from flows.cli.main import main
from flows.params.batch import BatchParams
from flows.params.gate import gate_limits
from flows.params.stage import StageParams
from flows.stage import stage_flow
from tasks.publish.links import job_artifact_key
from tests.flows.support import local_path
from tests.flows.test_artifacts import artifacts_of
from tests.flows.test_sharded import make_sharded_job

pytestmark = pytest.mark.usefixtures("prefect_server")

# The sharded job measures: landed 39/48, lost 6/48, failed 3/48 (agent_request_failed 2,
# judge_failed 1), unhealthy 9/40, unobserved 7/40, model_call_failed observed on 33/40.
PASSING = {
    "min_landed_share": 0.8,
    "max_lost_share": 0.13,
    "max_failed_share": 0.07,
    "max_failed_share.judge_failed": 0.03,
    "max_unhealthy_share": 0.25,
    "max_unobserved_share": 0.2,
    "min_observed_share.model_call_failed": 0.8,
}
FAILING = {
    "min_landed_share": 0.9,
    "max_lost_share": 0.1,
    "max_failed_share": 0.05,
    "max_failed_share.agent_request_failed": 0.02,
    "max_unhealthy_share": 0.2,
    "max_unobserved_share": 0.1,
    "min_observed_share.model_call_failed": 0.9,
}


@pytest.fixture(scope="module")
def job_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sharded_job(tmp_path_factory.mktemp("gated") / "jobs" / "sharded").root


def _params(root: Path, out: Path, limits: dict[str, float], run_id: str) -> StageParams:
    return StageParams(
        rollouts=f"{root}/rollouts-*.jsonl",
        capture_dir=str(root / "model-calls"),
        output=str(out),
        run_id=run_id,
        task_runner="thread",
        gate=gate_limits(limits),
    )


def _run_events(job_id: str, run_id: str) -> list[Any]:
    """The run's evidence-stage events on the server, waited for (events are sent in the background)."""
    wanted = EventFilter(
        event=EventNameFilter(prefix=["evidence-stage."]), resource=EventResourceFilter(id=[f"evidence-stage.run.{job_id}.{run_id}"])
    )
    deadline = time.monotonic() + 30
    with get_client(sync_client=True) as client:
        while not (events := client.read_events(wanted, limit=50).events) and time.monotonic() < deadline:
            time.sleep(0.5)
    return events


def test_a_passing_gate_completes_and_becomes_latest(job_root: Path, tmp_path: Path) -> None:
    state = stage_flow(_params(job_root, tmp_path, PASSING, "r1"), return_state=True)
    assert state.is_completed()
    run = local_path(state.result()["run_dir"])
    gate = json.loads((run / "gate.json").read_text())
    assert (gate["passed"], gate["failing"]) == (True, [])
    assert sorted((e["name"], e["passed"]) for e in gate["limits"]) == sorted((name, True) for name in PASSING)
    assert json.loads((run / "manifest.json").read_text())["gate"] == gate
    assert (run.parent.parent / "LATEST").read_text().strip() == "r1"
    assert not (run.parent.parent / "LATEST_FAILED_GATE").exists()
    assert (
        "Quality gate: passed"
        in artifacts_of(state.state_details.flow_run_id)[job_artifact_key("evidence-stage-gate", run.parent.parent.name)].data
    )


def test_a_failing_gate_publishes_the_run_but_fails_the_flow_run_and_emits_an_event(job_root: Path, tmp_path: Path) -> None:
    state = stage_flow(_params(job_root, tmp_path, FAILING, "f1"), return_state=True)
    assert state.is_failed()
    failed = state.result(raise_on_failure=False)
    run = local_path(failed.result["run_dir"])
    gate = json.loads((run / "gate.json").read_text())
    assert (gate["passed"], sorted(gate["failing"])) == (False, sorted(FAILING))
    measured = {e["name"]: e["measured"] for e in gate["limits"]}
    assert measured == {
        "min_landed_share": 39 / 48,
        "max_lost_share": 6 / 48,
        "max_failed_share": 3 / 48,
        "max_failed_share.agent_request_failed": 2 / 48,
        "max_unhealthy_share": 9 / 40,
        "max_unobserved_share": 7 / 40,
        "min_observed_share.model_call_failed": 33 / 40,
    }
    assert state.message == str(failed)
    assert "\n" not in state.message
    assert state.message.startswith("quality gate failed: min_landed_share 0.8125 (limit 0.9); max_lost_share 0.125 (limit 0.1);")
    assert (run / "_SUCCESS").exists()
    assert (run / "rollouts.jsonl").exists()
    job_dir = run.parent.parent
    assert not (job_dir / "LATEST").exists()
    assert (job_dir / "LATEST_FAILED_GATE").read_text().strip() == "f1"
    assert 'data-passed="false"' in (run / "report.html").read_text()
    (event,) = _run_events(job_dir.name, "f1")  # gate.failed, and no run.completed for exports to follow
    assert event.event == "evidence-stage.gate.failed"
    assert (event.payload["job_id"], event.payload["run_id"]) == (job_dir.name, "f1")
    assert [limit["name"] for limit in event.payload["failing"]] == gate["failing"]


def test_run_exits_3_with_one_line_and_an_unknown_limit_is_a_usage_error(
    job_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = [
        "run",
        "--rollouts",
        f"{job_root}/rollouts-*.jsonl",
        "--capture-dir",
        str(job_root / "model-calls"),
        "--output",
        str(tmp_path),
        "--task-runner",
        "thread",
    ]
    assert main([*base, "--run-id", "ok", "--gate", "max_lost_share=0.2"]) == 0
    capsys.readouterr()
    assert main([*base, "--run-id", "bad", "--gate", "max_lost_share=0.1"]) == 3
    errors = [
        line
        for line in capsys.readouterr().err.splitlines()
        if line.startswith("evidence-stage:") and not line.startswith("evidence-stage: run ")
    ]
    assert errors == ["evidence-stage: quality gate failed: max_lost_share 0.125 (limit 0.1)"]
    job_dir = next(tmp_path.iterdir())
    assert (job_dir / "LATEST").read_text().strip() == "ok"  # downstream readers keep the run that passed
    assert main([*base, "--gate", "max_lots_share=0.1"]) == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith("evidence-stage: error: unknown gate limit 'max_lots_share' (known: ")


def test_the_sweep_does_not_reprocess_a_gated_job_whose_inputs_did_not_change(job_root: Path, tmp_path: Path) -> None:
    params = BatchParams(prefix=str(job_root.parent), output=str(tmp_path), task_runner="thread", gate=gate_limits({"max_lost_share": 0.1}))
    (entry,) = batch_flow(params)["jobs"]
    assert (entry["status"], entry["reason"]) == ("failed", "quality gate failed: max_lost_share 0.125 (limit 0.1)")
    assert (local_path(entry["run_dir"]) / "_SUCCESS").exists()
    (again,) = batch_flow(params)["jobs"]
    assert (again["status"], again["run_id"]) == ("skipped", entry["run_id"])
    (loosened,) = batch_flow(params.model_copy(update={"gate": gate_limits({"max_lost_share": 0.2})}))["jobs"]
    assert (loosened["status"], loosened["reason"]) == ("processed", "config changed")


def test_score_limits_judge_the_runs_scores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The example job: chat_agent's mean/reward is 0, and every claude_code_agent rollout is unhealthy."""
    from tests.conftest import example_run_argv

    base = example_run_argv(tmp_path)
    unmasked = ["--score-mask", "none"]
    assert main([*base, "--run-id", "ok", *unmasked, "--gate", "max_score_shift=0", "--gate", "min_key_metric.mean/reward=0"]) == 0
    capsys.readouterr()
    runs = next(tmp_path.iterdir()) / "runs"
    gate = json.loads((runs / "ok" / "gate.json").read_text())
    assert [(e["name"], e["measured"], e["passed"]) for e in gate["limits"]] == [
        ("max_score_shift", 0.0, True),  # nothing masked: raw and clean agree
        ("min_key_metric.mean/reward", 0.0, True),
    ]
    assert main([*base, "--run-id", "low", *unmasked, "--gate", "min_key_metric.mean/reward=0.1"]) == 3
    errors = [
        line
        for line in capsys.readouterr().err.splitlines()
        if line.startswith("evidence-stage:") and not line.startswith("evidence-stage: run ")
    ]
    assert errors[-1] == "evidence-stage: quality gate failed: min_key_metric.mean/reward 0 (limit 0.1)"
    assert json.loads((runs / "low" / "gate.json").read_text())["limits"][0]["reason"] == "below the limit (chat_agent mean/reward)"
    assert main([*base, "--run-id", "masked", "--gate", "max_score_shift.mean/reward=1"]) == 3
    errors = [
        line
        for line in capsys.readouterr().err.splitlines()
        if line.startswith("evidence-stage:") and not line.startswith("evidence-stage: run ")
    ]
    assert errors[-1] == (
        "evidence-stage: quality gate failed: max_score_shift.mean/reward: "
        "no clean - raw for claude_code_agent mean/reward (every rollout masked, or the group left out)"
    )
    assert (runs.parent / "LATEST").read_text().strip() == "ok"
    assert main([*base, "--gate", "min_key_metric.reward=0.5"]) == 2
    assert "names no key metric" in capsys.readouterr().err.splitlines()[-1]
