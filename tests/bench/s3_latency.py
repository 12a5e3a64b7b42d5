"""Benchmark: one job on local disk and on S3 with a real bucket's latency, and the requests it costs.

Usage (from the repository root):

    .venv/bin/python tests/bench/s3_latency.py [--rollouts 300] [--latency-ms 30] [--api-url URL]

moto answers in well under a millisecond, so alone it hides what a real bucket costs: each
request's first byte takes tens of milliseconds there. Here moto's S3 server (127.0.0.1, in a
process of its own) sits behind tests/reliability/faultproxy.py in its latency mode, which delays every request by
``--latency-ms`` and counts them by kind. The same generated job runs first from and to local
disk, then from and to the bucket; both are whole ``evidence-stage run`` wall times against
one running Prefect server (``--api-url``, else one started here and not timed). The S3 side
runs twice, through the proxy with no delay and then with ``--latency-ms``: the first is what
moto and the proxy themselves cost (Python servers on the same cores, carrying every byte), so
the difference is what the latency costs.

Prints five JSON lines: ``{"side": "local", "wall_s", "timings"}``; ``{"side":
"s3_inputs_only", "wall_s", "objects"}``, the time s3fs alone takes to read every input object
once through the proxy without delay (one batched ``cat``, no stage work: a floor under what any
run on this store pays beyond a local run, which reads the same bytes from the page cache);
``{"side": "s3", "wall_s", "latency_ms", "store_cpu_s", "requests": {kind: count}, "timings"}``
for 0 ms and for ``--latency-ms`` (``store_cpu_s``: CPU seconds moto's server and the proxy
used during the run, on the same two cores as the stage); and ``{"local_s", "s3_0ms_s",
"s3_s", "ratio", "inputs_read_s", "latency_ratio", "store_cpu_s", "rollouts", "attempts",
"requests_per_attempt": {HEAD, GET, LIST, PUT, POST, DELETE, total}}``, where ratio = s3_s /
local_s, latency_ratio = s3_s / s3_0ms_s and the counts are every request of the delayed run
(uploading the job to the bucket beforehand is not counted).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.harness import (
    add_job_arguments,
    add_server_argument,
    cli_env,
    emit,
    ensure_job,
    free_port,
    job_rollouts,
    job_run_args,
    local_manifest,
    prefect_server,
    timed,
    warm_page_cache,
)
from tests.reliability.faultproxy import FaultPlan, FaultProxy

KINDS = ("HEAD", "GET", "LIST", "PUT", "POST", "DELETE")
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
RUN_ID = "s3-latency"
MOTO_START_TIMEOUT_S = 60


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_job_arguments(parser, 300)
    add_server_argument(parser)
    parser.add_argument("--latency-ms", type=float, default=30.0, help="delay added to every S3 request (default 30)")
    return parser.parse_args(argv)


def moto_client(endpoint: str) -> Any:
    """An s3fs filesystem that talks to moto directly, past the proxy (its requests are not counted)."""
    import s3fs

    return s3fs.S3FileSystem(endpoint_url=endpoint, key=CREDENTIALS["AWS_ACCESS_KEY_ID"], secret=CREDENTIALS["AWS_SECRET_ACCESS_KEY"])


def upload(job: Path, endpoint: str) -> None:
    """The job into s3://jobs/job, and an empty results bucket."""
    fs = moto_client(endpoint)
    fs.mkdir("jobs")
    fs.mkdir("results")
    fs.put(str(job) + "/", "jobs/job", recursive=True)


def read_inputs(endpoint: str) -> tuple[float, int]:
    """Wall seconds to read every input object of the job once, as fast as s3fs can (one batched
    ``cat``, all requests in flight), through the proxy without delay; and the object count.

    No stage work at all: a floor under what any run on this store pays beyond a local run,
    which reads the same bytes from the page cache.
    """
    with FaultProxy(endpoint, FaultPlan()) as proxy:
        fs = moto_client(proxy.url)
        keys = fs.find("jobs/job")
        started = time.perf_counter()
        fs.cat(keys)
        return round(time.perf_counter() - started, 2), len(keys)


def store_cpu_s(moto: psutil.Process) -> float:
    """CPU seconds used so far by the store's side: moto's server and this process (the proxy's threads)."""
    moto_times, own = moto.cpu_times(), resource.getrusage(resource.RUSAGE_SELF)
    return moto_times.user + moto_times.system + own.ru_utime + own.ru_stime


@contextlib.contextmanager
def moto_server() -> Iterator[tuple[str, psutil.Process]]:
    """moto's S3 server in a process of its own (its endpoint, and the process), so it does not
    share this process's interpreter lock with the latency proxy: each is one Python server on
    the same two cores as the stage."""
    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + MOTO_START_TIMEOUT_S
        while True:
            try:
                urllib.request.urlopen(endpoint, timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto_server did not start") from None
                time.sleep(0.1)
        yield endpoint, psutil.Process(server.pid)
    finally:
        server.terminate()
        server.wait(30)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    job, _ = ensure_job(args)
    warm_page_cache(job)
    with (
        moto_server() as (endpoint, moto),
        tempfile.TemporaryDirectory(prefix="evidence-stage-s3-latency-") as scratch,
        prefect_server(args.api_url, Path(scratch) / "prefect-home") as server,
    ):
        local = Path(scratch) / "out"
        local_s = round(
            timed(job_run_args(str(job_rollouts(job)), str(job / "model-calls"), str(local), RUN_ID), cli_env(server.api_url)), 2
        )
        manifest = local_manifest(local, RUN_ID)
        attempts = manifest["counts"]["attempts"]
        emit({"side": "local", "wall_s": local_s, "timings": manifest["timings"]})
        upload(job, endpoint)
        inputs_read_s, objects = read_inputs(endpoint)
        emit({"side": "s3_inputs_only", "wall_s": inputs_read_s, "objects": objects})
        walls = {}
        for latency_ms in (0.0, args.latency_ms):
            plan = FaultPlan(latency_s=latency_ms / 1000)
            output = f"results/out-{latency_ms:g}ms"
            with FaultProxy(endpoint, plan) as proxy:
                command = [
                    *job_run_args(f"s3://jobs/job/{job_rollouts(job).name}", "s3://jobs/job/model-calls", f"s3://{output}", RUN_ID),
                    "--storage-option",
                    f"endpoint_url={proxy.url}",
                ]
                cpu_before = store_cpu_s(moto)
                walls[latency_ms] = round(timed(command, cli_env(server.api_url, AWS_ENDPOINT_URL=proxy.url, **CREDENTIALS)), 2)
                store_s = round(store_cpu_s(moto) - cpu_before, 2)
            requests = {kind: plan.by_method[kind] for kind in KINDS}
            timings = json.loads(moto_client(endpoint).cat(f"{output}/bench/runs/{RUN_ID}/manifest.json"))["timings"]
            emit(
                {
                    "side": "s3",
                    "wall_s": walls[latency_ms],
                    "latency_ms": latency_ms,
                    "store_cpu_s": store_s,
                    "requests": requests,
                    "timings": timings,
                }
            )
    s3_s = walls[args.latency_ms]
    per_attempt = {kind: round(n / attempts, 2) for kind, n in requests.items()}
    emit(
        {
            "local_s": local_s,
            "s3_0ms_s": walls[0.0],
            "s3_s": s3_s,
            "ratio": round(s3_s / local_s, 2),
            "inputs_read_s": inputs_read_s,
            "latency_ratio": round(s3_s / walls[0.0], 2),
            "store_cpu_s": store_s,
            "rollouts": args.rollouts,
            "attempts": attempts,
            "requests_per_attempt": {**per_attempt, "total": round(sum(requests.values()) / attempts, 2)},
        }
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
