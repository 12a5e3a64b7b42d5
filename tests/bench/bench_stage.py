"""Benchmark the whole stage on a generated job; print ONE JSON line.

Usage (from the repository root):

    .venv/bin/python tests/bench/bench_stage.py --rollouts 2000

The job is generated once with ``tests/jobgen.py`` (cached under ``--jobs-root``). The stage
runs through the real flow in a child process against an already-running Prefect server:
``PREFECT_API_URL`` when set, else a ``prefect server start`` launched here (its start-up time
is reported as ``server_start_s`` and not counted in ``wall_s``). The child is measured from
the flow call to its return, so Python and Prefect import times are not counted either.

Fields: rows (input rows processed), input_mb (every input byte), wall_s, rows_per_s, mb_per_s,
peak_rss_mb (the stage's process tree, summed, sampled every 20 ms), stage_process_rss_mb (the
flow process alone, VmHWM), prefect_overhead_s and _pct (wall time minus in-task time: the
discover and reduce task bodies, the group task bodies divided by the workers that ran them in
parallel, and the flow's own report rendering), orjson_parse_s (reading and parsing every input
line once with orjson: the floor), stage_cpu_s (CPU seconds of the stage's process tree, which
includes Python start-up and imports; the load average tells how busy the machine was), plus
the shape and settings used; server_cpu_s is the Prefect server's CPU during the stage when
the harness started the server.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson
import psutil

REPO = Path(__file__).resolve().parents[2]
MB = 1024 * 1024
SAMPLE_SECONDS = 0.02


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, required=True)
    parser.add_argument("--calls-per-rollout", type=int, default=8)
    parser.add_argument("--history-bytes", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs-root", type=Path, default=Path(tempfile.gettempdir()) / "evidence-stage-bench")
    parser.add_argument("--task-runner", choices=["thread", "process", "dask"])
    parser.add_argument("--max-workers", type=int)
    parser.add_argument("--attempts-per-task", type=int)
    parser.add_argument("--keep-output", action="store_true", help="keep the run directory (default: deleted)")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # internal: run the flow with these params (JSON)
    return parser.parse_args(argv)


def ensure_job(args: argparse.Namespace) -> tuple[Path, float | None]:
    """The job directory for this shape; generated (and timed) only when not cached yet."""
    job = args.jobs_root / f"job-{args.rollouts}-{args.calls_per_rollout}-{args.history_bytes}-{args.seed}"
    if (job / "rollouts.jsonl").exists():
        return job, None
    sys.path.insert(0, str(REPO))
    from tests.jobgen import generate_job

    staging = job.with_name(job.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    started = time.perf_counter()
    generate_job(staging, rollouts=args.rollouts, calls_per_rollout=args.calls_per_rollout, history_bytes=args.history_bytes, seed=args.seed)
    staging.rename(job)
    return job, time.perf_counter() - started


def input_files(job: Path) -> list[Path]:
    files = [job / "rollouts.jsonl", job / "rollouts_failures.jsonl"]
    return [f for f in files if f.exists()] + sorted((job / "model-calls").iterdir())


def orjson_parse_pass(job: Path) -> tuple[float, int, int]:
    """Seconds to read and orjson-parse every input line once; bytes and rows seen."""
    total = rows = 0
    started = time.perf_counter()
    for path in input_files(job):
        data = path.read_bytes()
        total += len(data)
        for line in data.splitlines():
            try:
                orjson.loads(line)
            except orjson.JSONDecodeError:
                pass
        if path.parent == job:
            rows += sum(1 for line in data.splitlines() if line.strip())
    return time.perf_counter() - started, total, rows


def start_server(home: Path) -> tuple[subprocess.Popen[bytes], str, float]:
    """``prefect server start`` on a free port; returns the process, its API URL, start-up seconds."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_UI_ENABLED": "false"}
    prefect = Path(sys.executable).with_name("prefect")
    started = time.perf_counter()
    server = subprocess.Popen(
        [str(prefect), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/api"
    deadline = started + 180
    while time.perf_counter() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"prefect server exited with {server.returncode}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as reply:
                if reply.status == 200:
                    return server, url, time.perf_counter() - started
        except OSError:
            time.sleep(0.25)
    server.terminate()
    raise RuntimeError("prefect server did not become healthy within 180 s")


class TreeSampler:
    """Peak summed RSS and CPU seconds of a process and its descendants, sampled on a thread.

    CPU time is the last sample of each process seen (a process that exits loses at most one
    sampling interval); it shows the work done when other load on the machine inflates wall time.
    """

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.peak = 0
        self.cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = 0
            for proc in [self.root, *self._descendants()]:
                try:
                    with proc.oneshot():
                        rss += proc.memory_info().rss
                        times = proc.cpu_times()
                    self.cpu[proc.pid] = times.user + times.system
                except psutil.Error:
                    pass
            self.peak = max(self.peak, rss)
            self._stop.wait(SAMPLE_SECONDS)

    def _descendants(self) -> list[psutil.Process]:
        try:
            return self.root.children(recursive=True)
        except psutil.Error:
            return []

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def run_child(params_json: str) -> None:
    """In the child: run the flow once, print wall time, own peak RSS and the manifest timings."""
    sys.path.insert(0, str(REPO))
    from flows.params import StageParams
    from flows.stage import stage_flow
    from tests.reliability.peak_rss import own_peak_rss_kib

    params = StageParams(**json.loads(params_json))
    started = time.perf_counter()
    result = stage_flow(params)
    wall = time.perf_counter() - started
    manifest = json.loads((Path(result["run_dir"].removeprefix("file://")) / "manifest.json").read_text())
    print(json.dumps({
        "wall_s": wall,
        "stage_process_rss_mb": own_peak_rss_kib() / 1024,
        "timings": manifest["timings"],
        "counts": manifest["counts"],
    }))


def run_stage(job: Path, output: Path, args: argparse.Namespace, api_url: str) -> tuple[dict[str, Any], TreeSampler]:
    params: dict[str, Any] = {
        "rollouts": str(job / "rollouts.jsonl"), "capture_dir": str(job / "model-calls"), "output": str(output),
        "session_id": "bench", "agent_version": "1.0.0",
    }
    for name in ("task_runner", "max_workers", "attempts_per_task"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    env = {**os.environ, "PREFECT_API_URL": api_url, "PREFECT_LOGGING_LEVEL": "WARNING", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    child = subprocess.Popen(
        [sys.executable, __file__, "--rollouts", "0", "--child", json.dumps(params)],
        env=env, cwd=REPO, stdout=subprocess.PIPE,
    )
    with TreeSampler(child.pid) as sampler:
        out, _ = child.communicate()
    if child.returncode != 0:
        raise RuntimeError(f"stage child failed with exit code {child.returncode}")
    return json.loads(out.decode().strip().splitlines()[-1]), sampler


def _cpu_seconds(server: subprocess.Popen[bytes] | None) -> float:
    """CPU seconds of the server we started (and its workers) so far; 0 when it is not ours."""
    if server is None:
        return 0.0
    root = psutil.Process(server.pid)
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        times = proc.cpu_times()
        total += times.user + times.system
    return total


def in_task_seconds(timings: dict[str, float]) -> float:
    """Work done inside task bodies (and the flow's own rendering), parallel fan-out divided out."""
    fan_out = timings["in_task_s"] / max(1, timings["fan_out_parallelism"])
    return timings["discover_task_s"] + fan_out + timings["reduce_task_s"] + timings["report_s"]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        run_child(args.child)
        return 0
    job, generated_s = ensure_job(args)
    parse_s, input_bytes, rows = orjson_parse_pass(job)  # also warms the page cache for the stage
    server = None
    server_start_s = None
    api_url = os.environ.get("PREFECT_API_URL")
    scratch = Path(tempfile.mkdtemp(prefix="evidence-stage-bench-"))
    try:
        if not api_url:
            server, api_url, server_start_s = start_server(scratch / "prefect-home")
        server_cpu = _cpu_seconds(server)
        child, sampler = run_stage(job, scratch / "out", args, api_url)
        server_cpu = None if server is None else _cpu_seconds(server) - server_cpu
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)  # the CLI and its uvicorn process
            server.wait(30)
        if not args.keep_output:
            shutil.rmtree(scratch, ignore_errors=True)
    wall, timings = child["wall_s"], child["timings"]
    overhead = wall - in_task_seconds(timings)
    print(json.dumps({
        "rows": rows,
        "input_mb": round(input_bytes / MB, 1),
        "wall_s": round(wall, 2),
        "rows_per_s": round(rows / wall, 1),
        "mb_per_s": round(input_bytes / MB / wall, 1),
        "peak_rss_mb": round(sampler.peak / MB, 1),
        "stage_process_rss_mb": round(child["stage_process_rss_mb"], 1),
        "prefect_overhead_s": round(overhead, 2),
        "prefect_overhead_pct": round(100 * overhead / wall, 1),
        "orjson_parse_s": round(parse_s, 2),
        "stage_cpu_s": round(sum(sampler.cpu.values()), 1),
        "server_cpu_s": None if server_cpu is None else round(server_cpu, 1),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "server_start_s": None if server_start_s is None else round(server_start_s, 1),
        "job_generation_s": None if generated_s is None else round(generated_s, 1),
        "shape": {"rollouts": args.rollouts, "calls_per_rollout": args.calls_per_rollout, "history_bytes": args.history_bytes, "seed": args.seed},
        "settings": {"task_runner": args.task_runner, "max_workers": args.max_workers, "attempts_per_task": args.attempts_per_task},
        "timings": timings,
        "counts": child["counts"]["by_status"],
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
