"""Shared fixtures: one Prefect test server per session, a moto S3 server, clean memory://."""

from __future__ import annotations

import logging
import os
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="evidence-stage-prefect-"))
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_JOB = REPO / "tests" / "data" / "example_job"


def example_run_argv(output: str | Path) -> list[str]:
    """``evidence-stage run``'s arguments for the bundled example job, written to ``output``."""
    return [
        "run",
        "--rollouts",
        str(EXAMPLE_JOB / "rollouts.jsonl"),
        "--capture-dir",
        str(EXAMPLE_JOB / "model-calls"),
        "--output",
        str(output),
    ]


SAMPLES = REPO / "tests" / "data" / "samples"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def prefect_server() -> Iterator[str]:
    """One real Prefect server (subprocess, SQLite) for the whole session; yields its API URL."""
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield str(PREFECT_API_URL.value())


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server on 127.0.0.1 (a real HTTP endpoint; s3fs cannot use mock_aws)."""
    from moto.server import ThreadedMotoServer

    # Its request lines (werkzeug, INFO) reach stderr once any test has configured logging (a
    # flow run does), and tests that hold a command's stderr to one line would read them.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    saved = {k: os.environ.get(k) for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}
    os.environ.update(
        AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1"
    )
    try:
        yield endpoint
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def s3(s3_endpoint: str) -> Iterator[str]:
    """A clean moto state and fresh s3fs instances for one test."""
    import requests
    import s3fs

    requests.post(f"{s3_endpoint}/moto-api/reset", timeout=10)
    s3fs.S3FileSystem.clear_instance_cache()
    yield s3_endpoint
    s3fs.S3FileSystem.clear_instance_cache()


@pytest.fixture
def memfs() -> Iterator[None]:
    """Empty the process-global memory:// filesystem around a test."""
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.store.clear()
    fs.pseudo_dirs[:] = [""]
    yield
    fs.store.clear()
    fs.pseudo_dirs[:] = [""]


@pytest.fixture(scope="session")
def compared_runs(tmp_path_factory: pytest.TempPathFactory, prefect_server: str) -> object:
    """Three stage runs of one generated job: a run, a rerun, a run after known input changes
    (``tests/compared_runs.py``)."""
    from tests.compared_runs import make_compared_runs

    return make_compared_runs(tmp_path_factory.mktemp("compared"))


@pytest.fixture(scope="session")
def dask_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A ``dask scheduler`` and one ``dask worker`` process, started in a directory of their own.

    Unlike a LocalCluster, these workers inherit neither the test's working directory nor its
    ``sys.path``: what they import or open is what a remote cluster would.
    """
    import subprocess
    import sys
    import time

    from distributed import Client

    cwd = tmp_path_factory.mktemp("dask-cwd")
    address = f"tcp://127.0.0.1:{free_port()}"
    dask = str(Path(sys.executable).parent / "dask")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    started = [
        subprocess.Popen(
            [dask, "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1], "--no-dashboard"],
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        ),
    ]
    try:
        time.sleep(1)
        started.append(
            subprocess.Popen(
                [dask, "worker", address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard"],
                cwd=cwd,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
        with Client(address, timeout=60) as client:
            client.wait_for_workers(1, timeout=120)
        yield address
    finally:
        for process in reversed(started):
            process.terminate()
            process.wait(timeout=30)
