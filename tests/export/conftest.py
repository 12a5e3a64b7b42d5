"""A real ``mlflow server`` on 127.0.0.1 (SQLite store; artifacts proxied by the server into a
local folder, so the client uploads them over HTTP as it would to a remote server), and a
finished run of the bundled example job to export."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_JOB, free_port
from tests.flows.support import local_path, run_stage
from tests.flows.test_deployments import healthy, start, stop, wait_for
from tests.venvs import VenvUnavailable, private_venv

MLFLOW_SERVER_PACKAGES = ("mlflow==3.17.2",)  # the full server; the project itself needs only mlflow-skinny
START_TIMEOUT_S = 120
# No usage telemetry leaves the machine, and no job-runner processes (the server's background
# jobs are not used here and cost seconds of start-up).
QUIET = {"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true", "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
for _key, _value in QUIET.items():
    os.environ.setdefault(_key, _value)  # the client in this process too


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server's URL; the process group is stopped after the session."""
    try:
        venv = private_venv(".venv-mlflow", MLFLOW_SERVER_PACKAGES)
    except VenvUnavailable as error:
        pytest.skip(f"mlflow 3.17.2 venv unavailable: {error}")
    root = tmp_path_factory.mktemp("mlflow")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [
        str(venv / "bin" / "mlflow"),
        "server",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--backend-store-uri",
        f"sqlite:///{root / 'mlflow.db'}",
        "--artifacts-destination",
        str(root / "artifacts"),
    ]
    server = start(command, {**os.environ, **QUIET}, root / "server.log")
    try:
        wait_for(lambda: healthy(url) or server.poll() is not None, "the MLflow server", timeout=START_TIMEOUT_S)
        assert server.poll() is None, (root / "server.log").read_text(errors="replace")[-3000:]
        yield url
    finally:
        stop(server)


@pytest.fixture
def example_run_dir(prefect_server: str, tmp_path: Path) -> Path:
    """A new finished stage run of the bundled example job (its own run id, so its own trace ids)."""
    result = run_stage(rollouts=str(EXAMPLE_JOB / "rollouts.jsonl"), capture_dir=str(EXAMPLE_JOB / "model-calls"), output=str(tmp_path))
    return local_path(result["run_dir"])
