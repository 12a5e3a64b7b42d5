"""Deployments against a real ``prefect server start`` and ``evidence-stage serve``.

One server process and one serve process for the whole module (each costs tens of seconds to
start). Waits are bounded: a test fails with what it was waiting for, never hangs.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import psutil
import pytest
import yaml

from evidence import capture_file_id
from flows.deployments import CRASH_AUTOMATION, build_deployments, load_config
from tasks.inputs.naming import canonical_url, job_id_for
from tests.conftest import REPO, SAMPLES, free_port
from tests.flows.test_working_directory import crowded_directory
from tests.jobgen import generate_job

SAMPLE = SAMPLES / "realistic_job"
BIN = Path(sys.executable).parent
WAIT_S = 240
HEARTBEAT_S = 30  # Prefect's shortest heartbeat period


def wait_for(check: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def start(command: list[str], env: dict[str, str], log: Path, cwd: Path = REPO) -> subprocess.Popen:
    return subprocess.Popen(command, env=env, cwd=cwd, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to the process group we started (server workers, served flow runs), then SIGKILL."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def copy_job(target: Path) -> Path:
    shutil.copytree(SAMPLE, target)
    return target


def healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A ``prefect server start`` process and an ``evidence-stage serve`` process using it.

    ``serve`` starts in a directory holding folders named like the packages (``evidence/``,
    ``tasks/``, ``flows/``), so every served flow run shows they do not hide them.
    """
    root = tmp_path_factory.mktemp("deployments")
    url = f"http://127.0.0.1:{free_port()}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(
        PREFECT_HOME=str(root / "home"),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_API_URL=url,
        PREFECT_FLOWS_HEARTBEAT_FREQUENCY=str(HEARTBEAT_S),
    )
    server_env = {**env, "PREFECT_API_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{root / 'prefect.db'}", "PREFECT_UI_ENABLED": "false"}
    port = url.rsplit(":", 1)[1].split("/", maxsplit=1)[0]
    server = start([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", port], server_env, root / "server.log")
    serve = None
    try:
        wait_for(lambda: healthy(url) or server.poll() is not None, "the Prefect server")
        assert server.poll() is None, (root / "server.log").read_text()[-3000:]
        config = root / "stage.yaml"
        config.write_text(
            yaml.safe_dump(
                {"output": str(root / "out"), "sweep": {"cron": "0 0 1 1 *", "prefix": str(root / "sweep-jobs"), "max_concurrency": 1}}
            )
        )
        serve_cwd = crowded_directory(root / "serve-cwd")
        serve = start([str(BIN / "evidence-stage"), "serve", "--config", str(config)], env, root / "serve.log", cwd=serve_cwd)
        with prefect_client(url) as client:
            for name in ("evidence-stage/on-eval-complete", "evidence-stage/manual", "evidence-stage/sweep"):
                wait_for(lambda name=name: _deployment(client, name) or serve.poll() is not None, f"deployment {name}")
                assert serve.poll() is None, (root / "serve.log").read_text(errors="replace")[-3000:]
            for automation in ("evidence-stage on gym.eval.completed", CRASH_AUTOMATION):
                wait_for(lambda automation=automation: client.read_automations_by_name(automation), f"the automation {automation!r}")
        yield {"url": url, "env": env, "root": root, "output": root / "out"}
    finally:
        for process in (serve, server):
            if process is not None:
                stop(process)


def prefect_client(url: str) -> Any:
    from prefect.client.orchestration import SyncPrefectClient

    return SyncPrefectClient(url)


def _deployment(client: Any, name: str) -> Any:
    from prefect.exceptions import ObjectNotFound

    try:
        return client.read_deployment_by_name(name)
    except ObjectNotFound:
        return None


def finished_runs(url: str, deployment: str) -> list[Any]:
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    with prefect_client(url) as client:
        deployment_id = client.read_deployment_by_name(deployment).id
        runs = client.read_flow_runs(deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id])))
    return [run for run in runs if run.state is not None and run.state.is_final()]


def logs_of(served: dict[str, Any]) -> str:
    return (served["root"] / "serve.log").read_text(errors="replace")[-4000:]


def test_notify_triggers_the_job_flow_and_its_outputs_appear(served: dict[str, Any]) -> None:
    copy_job(served["root"] / "jobs" / "night-eval")
    result = subprocess.run(
        [
            str(BIN / "evidence-stage"),
            "notify",
            "--rollouts",
            "jobs/night-eval/rollouts.jsonl",
            "--capture-dir",
            "jobs/night-eval/model-calls",
        ],
        check=False,
        env=served["env"],
        cwd=served["root"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    runs = wait_for(lambda: finished_runs(served["url"], "evidence-stage/on-eval-complete"), "the triggered flow run")
    assert [run.state.type.value for run in runs] == ["COMPLETED"], logs_of(served)
    rollouts = served["root"] / "jobs" / "night-eval" / "rollouts.jsonl"
    job_dir = served["output"] / job_id_for(str(rollouts))
    run_id = (job_dir / "LATEST").read_text().strip()
    run_dir = job_dir / "runs" / run_id
    assert (run_dir / "_SUCCESS").exists()
    assert json.loads((run_dir / "params.json").read_text())["rollouts"] == canonical_url(str(rollouts))
    assert (run_dir / "rollouts.jsonl").read_bytes().count(b"\n") == SAMPLE.joinpath("rollouts.jsonl").read_bytes().count(b"\n")


def run_manual(served: dict[str, Any], job: Path, **params: Any) -> subprocess.CompletedProcess[str]:
    """``prefect deployment run evidence-stage/manual`` over ``job`` with these parameters, watched to the end."""
    params = {"rollouts": str(job / "rollouts.jsonl"), "capture_dir": str(job / "model-calls"), "output": str(served["output"]), **params}
    return run_deployment("evidence-stage/manual", params, served["env"])


def run_deployment(name: str, params: dict[str, Any], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``prefect deployment run <name>`` with the flow's ``params``, watched to the end."""
    return subprocess.run(
        [
            str(BIN / "prefect"),
            "deployment",
            "run",
            name,
            "--params",
            json.dumps({"params": params}),
            "--watch",
            "--watch-timeout",
            str(WAIT_S),
        ],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT_S + 60,
    )


def test_manual_deployment_run_uses_the_given_parameters(served: dict[str, Any]) -> None:
    job = copy_job(served["root"] / "manual-job")
    first_id = capture_file_id(orjson.loads((job / "rollouts.jsonl").read_bytes().splitlines()[0]))
    result = run_manual(
        served,
        job,
        job_id="chosen-job",
        run_id="chosen-run",
        rollout_ids=[first_id],
        attempts_per_task=1,
        ignored_checks=["model_call_failed,record_unreadable"],  # the form's entries follow the health drop-in's rule
    )
    assert result.returncode == 0, result.stdout[-3000:] + logs_of(served)
    run_dir = served["output"] / "chosen-job" / "runs" / "chosen-run"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["run"]["scope"] == "subset"
    assert manifest["counts"]["attempts"] == 1
    assert manifest["parameters"]["rollout_ids"] == [first_id]
    assert manifest["parameters"]["ignored_checks"] == ["model_call_failed", "record_unreadable"]
    assert not (served["output"] / "chosen-job" / "LATEST").exists()


def test_manual_deployment_run_with_an_unknown_check_fails_before_claiming(served: dict[str, Any]) -> None:
    job = copy_job(served["root"] / "unknown-check-job")
    result = run_manual(served, job, job_id="unknown-check", run_id="r1", ignored_checks=["model_call_failed", "bogus_check"])
    assert result.returncode != 0, result.stdout[-3000:]
    assert "Unknown rollout health check(s): bogus_check" in logs_of(served)
    assert not (served["output"] / "unknown-check").exists()


def test_sweep_deployment_processes_the_configured_prefix(served: dict[str, Any]) -> None:
    copy_job(served["root"] / "sweep-jobs" / "job-1")
    result = subprocess.run(
        [str(BIN / "prefect"), "deployment", "run", "evidence-stage/sweep", "--watch", "--watch-timeout", str(WAIT_S)],
        check=False,
        env=served["env"],
        capture_output=True,
        text=True,
        timeout=WAIT_S + 60,
    )
    assert result.returncode == 0, result.stdout[-3000:] + logs_of(served)
    summaries = sorted((served["output"] / "batches").glob("*.json"))
    assert len(summaries) == 1
    summary = json.loads(summaries[0].read_text())
    assert summary["prefix"] == canonical_url(str(served["root"] / "sweep-jobs"))  # made absolute when serve read its config
    assert [(job["status"], job["reason"]) for job in summary["jobs"]] == [("processed", "no complete run")]


def _file_entrypoint(module_path: str) -> str:
    module, _, function = module_path.rpartition(".")
    return f"{module.replace('.', '/')}.py:{function}"


def test_prefect_yaml_declares_the_served_deployments() -> None:
    served = build_deployments(load_config(REPO / "configs" / "stage.yaml"))
    declared = yaml.safe_load((REPO / "configs" / "prefect.yaml").read_text())
    by_name = {d["name"]: d for d in declared["deployments"]}
    assert set(by_name) == {d.name for d in served}
    for deployment in served:
        entry = by_name[deployment.name]
        assert entry["entrypoint"] == _file_entrypoint(deployment.entrypoint)
        assert entry["work_pool"]["name"] == "evidence-stage"
        assert entry.get("parameters", {}) == deployment.parameters
        assert [s["cron"] for s in entry.get("schedules", [])] == [s.schedule.cron for s in deployment.schedules]
        triggers = [(t.name, sorted(t.expect), t.parameters) for t in deployment.triggers]
        assert [(t["name"], t["expect"], t["parameters"]) for t in entry.get("triggers", [])] == triggers


def test_prefect_yaml_deploys_to_a_process_pool_whose_worker_runs_it(served: dict[str, Any], dask_cluster: str) -> None:
    """The compose setup's commands (work pool, prefect deploy, process worker) on this host,
    on a separate Dask cluster: the worker loads the file entrypoint ``flows/stage.py`` as a
    module named ``stage``, and the Dask workers (another directory, their own ``sys.path``)
    unpickle the flow with every task run.

    The deployments get a ``-pool`` suffix and disabled triggers so they do not compete with
    the served ones on the same server.
    """
    declared = yaml.safe_load((REPO / "configs" / "prefect.yaml").read_text())
    for deployment in declared["deployments"]:
        deployment["name"] += "-pool"
        for trigger in deployment.get("triggers", []):
            trigger["enabled"] = False
    prefect_file = served["root"] / "prefect.yaml"
    prefect_file.write_text(yaml.safe_dump(declared))
    env = {**served["env"], "EVIDENCE_STAGE_HOME": str(REPO)}
    for command in (
        ["work-pool", "create", "evidence-stage", "--type", "process", "--overwrite"],
        ["deploy", "--all", "--prefect-file", str(prefect_file)],
    ):
        done = subprocess.run(
            [str(BIN / "prefect"), "--no-prompt", *command], check=False, env=env, cwd=REPO, capture_output=True, text=True, timeout=WAIT_S
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    job = copy_job(served["root"] / "pool-job")
    params = {
        "rollouts": str(job / "rollouts.jsonl"),
        "capture_dir": str(job / "model-calls"),
        "output": str(served["output"]),
        "job_id": "pool-job",
    }
    params.update(task_runner="dask", dask_address=dask_cluster)
    worker = start(
        [str(BIN / "prefect"), "worker", "start", "--pool", "evidence-stage", "--type", "process"], env, served["root"] / "worker.log"
    )
    try:
        result = run_deployment("evidence-stage/manual-pool", params, env)
    finally:
        stop(worker)
    assert result.returncode == 0, result.stdout[-3000:] + (served["root"] / "worker.log").read_text(errors="replace")[-3000:]
    run_id = (served["output"] / "pool-job" / "LATEST").read_text().strip()
    assert (served["output"] / "pool-job" / "runs" / run_id / "_SUCCESS").exists()


def test_infra_runs_the_pinned_prefect_and_the_declared_work_pool() -> None:
    compose = yaml.safe_load((REPO / "infra" / "docker-compose.yml").read_text())
    declared = yaml.safe_load((REPO / "configs" / "prefect.yaml").read_text())
    worker_values = yaml.safe_load((REPO / "infra" / "helm" / "prefect-worker.values.yaml").read_text())
    pools = {d["work_pool"]["name"] for d in declared["deployments"]}
    assert pools == {"evidence-stage"} == {worker_values["worker"]["config"]["workPool"]}
    services = compose["services"]
    assert "--pool evidence-stage " in services["worker"]["command"] + " "
    assert "--prefect-file configs/prefect.yaml" in services["deploy"]["command"]
    pinned = next(
        dep.split("==")[1]
        for dep in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
        if dep.startswith("prefect==")
    )
    assert declared["prefect-version"] == pinned
    assert services["prefect-server"]["image"].startswith(f"prefecthq/prefect:{pinned}-")
    assert worker_values["worker"]["image"]["prefectTag"].startswith(f"{pinned}-")
    server_values = yaml.safe_load((REPO / "infra" / "helm" / "prefect-server.values.yaml").read_text())
    assert server_values["global"]["prefect"]["image"]["prefectTag"].startswith(f"{pinned}-")  # where the chart reads the tag
    assert services["deploy"]["environment"]["EVIDENCE_STAGE_HOME"] == "/opt/evidence-stage"
    assert "WORKDIR /opt/evidence-stage" in (REPO / "infra" / "Dockerfile").read_text()


def _flow_run_of_job(url: str, job_id: str) -> Any:
    with prefect_client(url) as client:
        runs = client.read_flow_runs()
    return next((run for run in runs if run.parameters.get("params", {}).get("job_id") == job_id), None)


def _still_running(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE  # orphans are reaped by whatever init there is
    except psutil.NoSuchProcess:
        return False


def test_kill_9_of_the_cli_stops_its_workers_and_its_flow_run_ends_crashed(served: dict[str, Any]) -> None:
    """The attempt workers exit with the CLI; served's automation marks the silent run Crashed."""
    job = served["root"] / "killed-job"
    generate_job(job, rollouts=400, calls_per_rollout=2, history_bytes=200)
    run_dir = served["output"] / "killed" / "runs" / "r1"
    cli = start(
        [
            str(BIN / "evidence-stage"),
            "run",
            "--rollouts",
            str(job / "rollouts.jsonl"),
            "--capture-dir",
            str(job / "model-calls"),
            "--output",
            str(served["output"]),
            "--job-id",
            "killed",
            "--run-id",
            "r1",
            "--attempts-per-task",
            "1",
            "--max-workers",
            "2",
        ],
        served["env"],
        served["root"] / "killed.log",
    )
    try:
        wait_for(lambda: any(run_dir.glob("attempts/**/*.seg*")) or cli.poll() is not None, "the first parts")
        assert cli.poll() is None, (served["root"] / "killed.log").read_text(errors="replace")[-3000:]
        descendants = psutil.Process(cli.pid).children(recursive=True)
        assert len(descendants) >= 3  # forkserver, resource tracker, workers
        os.kill(cli.pid, signal.SIGKILL)
        cli.wait(timeout=30)
        wait_for(lambda: not any(_still_running(p) for p in descendants), "the CLI's workers to exit", timeout=30)
        assert not (run_dir / "_SUCCESS").exists()
        run = wait_for(lambda: _flow_run_of_job(served["url"], "killed"), "the killed run's flow run")
        crashed = wait_for(
            lambda: (current := _flow_run_of_job(served["url"], "killed")).state.is_final() and current,
            "the flow run's final state",
            timeout=HEARTBEAT_S * 6 + WAIT_S,
        )
        assert crashed.state.type.value == "CRASHED", (run.id, crashed.state)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(cli.pid, signal.SIGKILL)


def test_the_score_mask_of_stage_yaml_reaches_triggered_and_swept_runs() -> None:
    from flows.deployments import sweep_parameters, trigger_parameters
    from flows.params.batch import BatchParams
    from flows.params.stage import ScoreMask
    from tasks.batch.jobs import FoundJob

    config = load_config(REPO / "configs" / "stage.yaml")
    assert config.score_mask is ScoreMask.unhealthy  # stage.yaml sets it beside the gate
    assert "score_mask" not in trigger_parameters(config)["params"]  # the default: the deployments' parameters stay as they were
    assert config.sweep is not None
    assert "score_mask" not in sweep_parameters(config, config.sweep)["params"]
    config = config.model_copy(update={"score_mask": ScoreMask.unhealthy_unobserved})
    assert trigger_parameters(config)["params"]["score_mask"] == "unhealthy,unobserved"
    batch = BatchParams.model_validate(sweep_parameters(config, config.sweep)["params"])
    job = batch.job_params(FoundJob("s3://evals/jobs/a", "s3://evals/jobs/a/rollouts.jsonl", "s3://evals/jobs/a/model-calls", "a"))
    assert job.score_mask is ScoreMask.unhealthy_unobserved  # every swept job's run masks the same
