"""What every benchmark here shares: the generated job, a running Prefect server, the timed CLI.

The benchmarks time the stage the way a user runs it: ``evidence-stage run`` in a fresh process
against an already running ``prefect server start`` (its start-up is never counted). The job is
generated once per shape with ``tests/jobgen.py`` and cached, so a rerun times the same bytes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("evidence-stage")
SERVER_START_TIMEOUT_S = 180


def add_job_arguments(parser: argparse.ArgumentParser, rollouts: int | None) -> None:
    """The job shape (``--rollouts`` required when there is no default) and where jobs are cached."""
    parser.add_argument("--rollouts", type=int, default=rollouts, required=rollouts is None)
    parser.add_argument("--calls-per-rollout", type=int, default=8)
    parser.add_argument("--history-bytes", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs-root", type=Path, default=Path(tempfile.gettempdir()) / "evidence-stage-bench")


def add_server_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--api-url",
        default=os.environ.get("PREFECT_API_URL"),
        help="a running Prefect server's API (default: $PREFECT_API_URL, else one is started here)",
    )


SHARD_ROLLOUTS = 10_000
"""Above this many rollouts a job is generated as shards of this many (``tests.jobgen.generate_shards``):
the generator holds a job in memory, about 1 GB per 1,000 rollouts of the default shape."""


def ensure_job(args: argparse.Namespace) -> tuple[Path, float | None]:
    """The job directory for this shape; generated (and timed) only when not cached yet."""
    job = args.jobs_root / f"job-{args.rollouts}-{args.calls_per_rollout}-{args.history_bytes}-{args.seed}"
    if job_rollouts(job).exists() or list(job.glob("shard-*.jsonl")):
        return job, None
    sys.path.insert(0, str(REPO))
    from tests.jobgen import generate_job, generate_shards

    staging = job.with_name(job.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    started = time.perf_counter()
    shape = {"calls_per_rollout": args.calls_per_rollout, "history_bytes": args.history_bytes, "seed": args.seed}
    if args.rollouts > SHARD_ROLLOUTS:
        generate_shards(staging, rollouts=args.rollouts, shard_rollouts=SHARD_ROLLOUTS, **shape)
    else:
        generate_job(staging, rollouts=args.rollouts, **shape)
    staging.rename(job)
    return job, time.perf_counter() - started


def job_rollouts(job: Path) -> Path:
    """What ``--rollouts`` names for a generated job: its ``rollouts.jsonl``, or a glob of its shards."""
    return job / "rollouts.jsonl" if not (job / "shard-00.jsonl").exists() else job / "shard-??.jsonl"


def input_files(job: Path) -> list[Path]:
    """Every file the stage reads from a generated job."""
    rows = sorted(job.glob("shard-*.jsonl")) or [job / "rollouts.jsonl", job / "rollouts_failures.jsonl"]
    return [f for f in rows if f.exists()] + sorted((job / "model-calls").iterdir())


def warm_page_cache(job: Path) -> int:
    """Read every input once, so neither side of a comparison pays for the first read from disk; the bytes read."""
    return sum(len(path.read_bytes()) for path in input_files(job))


@dataclass
class Server:
    """The Prefect API the runs report to; ``process`` is set when this harness started it."""

    api_url: str
    process: subprocess.Popen[bytes] | None = None
    start_s: float | None = None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(home: Path) -> Server:
    """``prefect server start`` on a free port, waited for until healthy."""
    port = free_port()
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_UI_ENABLED": "false"}
    started = time.perf_counter()
    process = subprocess.Popen(
        [str(CLI.with_name("prefect")), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/api"
    while time.perf_counter() < started + SERVER_START_TIMEOUT_S:
        if process.poll() is not None:
            raise RuntimeError(f"prefect server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as reply:
                if reply.status == 200:
                    return Server(url, process, time.perf_counter() - started)
        except OSError:
            time.sleep(0.25)
    stop_server(Server(url, process))
    raise RuntimeError(f"prefect server did not become healthy within {SERVER_START_TIMEOUT_S} s")


def stop_server(server: Server) -> None:
    """SIGTERM to the process group we started (the CLI and its uvicorn process)."""
    if server.process is not None and server.process.poll() is None:
        os.killpg(server.process.pid, signal.SIGTERM)
        server.process.wait(30)


@contextlib.contextmanager
def prefect_server(api_url: str | None, home: Path) -> Iterator[Server]:
    """The server at ``api_url``, else one started under ``home`` and stopped on exit."""
    if api_url:
        yield Server(api_url)
        return
    server = start_server(home)
    try:
        yield server
    finally:
        stop_server(server)


def cli_env(api_url: str, **extra: str) -> dict[str, str]:
    """The environment of a timed CLI run: this server, quiet logs, no analytics."""
    return {
        **os.environ,
        "PREFECT_API_URL": api_url,
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        **extra,
    }


def timed(command: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one command, run from the repository root; its output is discarded, a failure raises."""
    started = time.perf_counter()
    done = subprocess.run(command, check=False, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:2])} failed with exit code {done.returncode}: {done.stderr.decode()[-2000:]}")
    return wall


def job_run_args(rollouts: str, capture_dir: str, output: str, run_id: str) -> list[str]:
    """``evidence-stage run`` over a job with a fixed job and run id, so its manifest is found without parsing output."""
    return [
        str(CLI),
        "run",
        "--rollouts",
        rollouts,
        "--capture-dir",
        capture_dir,
        "--output",
        output,
        "--job-id",
        "bench",
        "--run-id",
        run_id,
    ]


def local_manifest(output: Path, run_id: str) -> dict[str, Any]:
    """The manifest of a run made with ``job_run_args`` under a local output root."""
    return json.loads((output / "bench" / "runs" / run_id / "manifest.json").read_text())


def emit(record: dict[str, Any]) -> None:
    """One JSON line on stdout, flushed, so a long benchmark shows each figure as it is measured."""
    print(json.dumps(record), flush=True)
