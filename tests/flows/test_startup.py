"""Start-up (issue 14, goal 3): what the CLI loads, and in which order.

Importing Prefect alone takes seconds on a busy machine, so ``evidence-stage --help`` stays fast
only while the command modules import what a subcommand needs inside its handler; and ``run``
launches the attempt forkserver before that import, so the two boot at once. A fresh
interpreter is the only place where ``sys.modules`` and the import order can be observed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import build_parser
from flows.execution.forkserver import WORKER_MODULES, worker_modules
from flows.params.stage import StageParams
from tests.conftest import EXAMPLE_JOB, REPO, example_run_argv

# The orchestration stack, and the evidence library (its pydantic models take ~0.2 s to build).
HEAVY = ("prefect", "dask", "distributed", "s3fs", "evidence")
PROBE = """
import contextlib, io, json, sys
import flows.cli.main
loaded = {"import flows.cli.main": sorted(sys.modules)}
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        flows.cli.main.main(argv)
    loaded[" ".join(["evidence-stage", *argv])] = sorted(sys.modules)
print(json.dumps(loaded))
"""


def _subcommands() -> list[str]:
    parser = build_parser()
    (choices,) = [action.choices for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    return list(choices)


def test_help_and_import_load_no_orchestration_modules() -> None:
    argvs = [["--help"]] + [[name, "--help"] for name in _subcommands()]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argvs)], cwd=REPO, capture_output=True, text=True, timeout=120, check=True
    )
    loaded = json.loads(done.stdout)
    assert len(loaded) == len(argvs) + 1
    heavy = {step: sorted({name.split(".")[0] for name in modules if name.split(".")[0] in HEAVY}) for step, modules in loaded.items()}
    assert heavy == {step: [] for step in loaded}


FORKSERVER_PROBE = """
import importlib.abc, json, multiprocessing.forkserver, sys
import flows.cli.main

class Stop(BaseException):
    pass

class AtPrefect(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "prefect":
            running = multiprocessing.forkserver._forkserver._forkserver_pid is not None
            raise Stop(running)
        return None

sys.meta_path.insert(0, AtPrefect())
try:
    flows.cli.main.main(sys.argv[1:])
except Stop as stop:
    print(json.dumps({"forkserver_running_at_prefect_import": stop.args[0]}))
"""


def _running_when_prefect_is_imported(extra: list[str]) -> bool:
    job = ["--rollouts", str(EXAMPLE_JOB / "rollouts.jsonl"), "--capture-dir", str(EXAMPLE_JOB / "model-calls")]
    argv = ["run", *job, "--output", "/nonexistent", *extra]  # stopped at the Prefect import: nothing is written
    done = subprocess.run(
        [sys.executable, "-c", FORKSERVER_PROBE, *argv], cwd=REPO, capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(done.stdout)["forkserver_running_at_prefect_import"]


def test_run_starts_the_attempt_forkserver_before_importing_prefect() -> None:
    """The forkserver's boot overlaps Prefect's import instead of following it inside the flow."""
    assert _running_when_prefect_is_imported([]) is True
    assert _running_when_prefect_is_imported(["--task-runner", "thread"]) is False


WORKER_PROBE = """
import json, sys
from concurrent.futures import ProcessPoolExecutor
from flows.execution.forkserver import forkserver_context
from flows.params.stage import StageParams

params = StageParams(**json.loads(sys.argv[1]))
with ProcessPoolExecutor(1, mp_context=forkserver_context(params)) as pool:
    print(json.dumps(pool.submit(eval, "'s3fs' in __import__('sys').modules").result()))
"""


def test_attempt_workers_of_a_run_on_s3_fork_with_s3fs_imported() -> None:
    """Imported once in the forkserver, not by each worker before its first read."""
    urls = {"rollouts": "/job/rollouts.jsonl", "capture_dir": "/job/model-calls", "output": "s3://b/out"}
    done = subprocess.run(
        [sys.executable, "-c", WORKER_PROBE, json.dumps(urls)], cwd=REPO, capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(done.stdout) is True


@pytest.mark.parametrize(
    ("urls", "s3"),
    [
        ({"rollouts": "s3://b/job/rollouts.jsonl", "capture_dir": "s3://b/job/model-calls", "output": "s3://b/out"}, True),
        ({"rollouts": ["/job/a.jsonl", "s3://b/job/b.jsonl"], "capture_dir": "/job/model-calls", "output": "/out"}, True),
        ({"rollouts": "/job/a.jsonl,s3a://b/job/b-*.jsonl", "capture_dir": "/job/model-calls", "output": "/out"}, True),
        ({"rollouts": "/job/rollouts.jsonl", "capture_dir": "s3://b/job/model-calls", "output": "/out"}, True),
        ({"rollouts": "/job/rollouts.jsonl", "capture_dir": "/job/model-calls", "output": "/out", "failures": "s3://b/f.jsonl"}, True),
        ({"rollouts": "/job/rollouts.jsonl", "capture_dir": "/job/model-calls", "output": "/out"}, False),
    ],
)
def test_the_forkserver_preloads_s3fs_only_for_a_run_that_touches_s3(urls: dict[str, Any], s3: bool) -> None:
    assert worker_modules(StageParams(**urls)) == [*WORKER_MODULES, *(["s3fs"] if s3 else [])]


def test_a_cli_flow_run_returns_without_joining_the_heartbeat_thread(prefect_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Prefect's engine looks the heartbeat context up at call time, so the CLI's override reaches it."""
    import prefect.flow_engine as engine
    from prefect import flow

    from flows.cli.console import heartbeat_thread_not_joined

    joins: list[bool] = []
    original = engine._send_heartbeats

    def observed(*args: Any, join_on_exit: bool = True) -> Any:
        joins.append(join_on_exit)
        return original(*args, join_on_exit=join_on_exit)

    monkeypatch.setattr(engine, "_send_heartbeats", observed)

    @flow(persist_result=False)
    def noop() -> int:
        return 1

    with heartbeat_thread_not_joined():
        assert noop() == 1
    assert joins == [False]
    assert noop() == 1
    assert joins == [False, True]


def test_the_console_script_keeps_exit_codes_and_output(prefect_server: str, tmp_path: Path) -> None:
    """``entry`` ends the process itself once exit handlers ran: nothing printed or owed is lost."""
    script = Path(sys.executable).with_name("evidence-stage")
    env = {**os.environ, "PREFECT_API_URL": prefect_server}
    inputs = ["--rollouts", str(EXAMPLE_JOB / "rollouts.jsonl"), "--capture-dir", str(EXAMPLE_JOB / "model-calls")]
    done = subprocess.run(
        [str(script), "run", *inputs, "--output", str(tmp_path), "--run-id", "r1"], check=False, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "outputs:" in done.stdout, "the summary is printed whole"
    assert done.stdout.rstrip().endswith("/runs/r1"), "the summary is printed whole"
    assert (next(tmp_path.glob("*/runs/r1")) / "_SUCCESS").exists()
    refused = subprocess.run(
        [str(script), "run", *inputs, "--output", str(tmp_path), "--run-id", "r1"], check=False, env=env, capture_output=True, text=True
    )
    assert refused.returncode == 2
    assert refused.stderr.startswith("evidence-stage: error: ")
    assert refused.stderr.count("\n") == 1


def test_a_cli_run_never_imports_fastapi(prefect_server: str, tmp_path: Path) -> None:
    """Prefect's own parameter encoder is FastAPI's (83 ms to 0.3 s to import here); a whole run needs none of it."""
    argv = example_run_argv(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps([argv])],
        check=False,
        cwd=REPO,
        env={**os.environ, "PREFECT_API_URL": prefect_server},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert len(list(tmp_path.glob("*/runs/*/_SUCCESS"))) == 1  # the run was published
    loaded = json.loads(done.stdout.splitlines()[-1])[" ".join(["evidence-stage", *argv])]
    assert [name for name in loaded if name.split(".")[0] == "fastapi"] == []


@pytest.mark.parametrize(
    "parameters",
    [
        {
            "params": StageParams(
                rollouts=["/job/a.jsonl", "s3://b/job/b.jsonl"],
                capture_dir="s3://b/job/model-calls",
                output="/out",
                rollout_ids=["r1"],
                task_runner="dask",
                storage_options={"endpoint_url": "http://127.0.0.1:9000"},
                gate={"max_lost_share": 0.25, "max_failed_share_by_class": {"timeout": 0.5}},
            )
        },
        {"params": {"rollouts": "/job/rollouts.jsonl", "capture_dir": "/job/model-calls", "output": "/out"}},  # a caller's dict
    ],
)
def test_a_flow_records_its_parameters_as_prefects_encoder_would(parameters: dict[str, Any]) -> None:
    from fastapi.encoders import jsonable_encoder

    from flows.stage import stage_flow

    recorded = stage_flow.serialize_parameters(parameters)
    assert recorded == {name: jsonable_encoder(value) for name, value in parameters.items()}
    assert json.loads(json.dumps(recorded)) == recorded
