"""Benchmark the whole stage on a generated job; print ONE JSON line.

Usage (from the repository root):

    .venv/bin/python tests/bench/bench_stage.py --rollouts 2000

The job is generated once with ``tests/jobgen.py`` (cached under ``--jobs-root``). The stage
runs through the real flow in a child process against an already-running Prefect server:
``--api-url`` (default ``PREFECT_API_URL``) when set, else a ``prefect server start`` launched here (its start-up time
is reported as ``server_start_s`` and not counted in ``wall_s``). The child is measured from
the flow call to its return, so Python and Prefect import times are not counted either.

Fields: rows (input rows processed), input_mb (every input byte), wall_s, rows_per_s, mb_per_s,
peak_rss_mb (the stage's process tree, summed, sampled every 20 ms), stage_process_rss_mb (the
flow process alone, VmHWM), prefect_overhead_s and _pct (wall time minus in-task time: the
discovery before the fan-out, the reduce after it, the group task bodies divided by the workers
that ran them in parallel, and the flow's own report rendering), tail_s (the manifest's: from
the last attempt's end to publishing), orjson_parse_s (reading and parsing every input
line once with orjson: the floor), stage_cpu_s (CPU seconds of the stage's process tree, which
includes Python start-up and imports; the load average tells how busy the machine was), plus
the shape and settings used; server_cpu_s is the Prefect server's CPU during the stage when
the harness started the server. Disk: peak_disk_mb is the most the output's filesystem held
beyond what it held before the run (sampled with the memory, so the segments, spills and
temporary tables count while they exist), run_dir_mb what the finished run directory holds.
fixed_cost: the run's time outside its attempts, traced in the child (``fixed_cost`` below says
each part); its ``ours_s`` is what issue 42's fixed-cost target (0.5 s at 2,000 rollouts) bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Self

import orjson
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import contextlib

from tests.bench.harness import (
    REPO,
    Server,
    add_job_arguments,
    add_server_argument,
    cli_env,
    ensure_job,
    input_files,
    job_rollouts,
    prefect_server,
)

MB = 1024 * 1024
SAMPLE_SECONDS = 0.02


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_job_arguments(parser, None)
    add_server_argument(parser)
    parser.add_argument("--task-runner", choices=["thread", "process", "dask"])
    parser.add_argument("--max-workers", type=int)
    parser.add_argument("--attempts-per-task", type=int)
    parser.add_argument("--keep-output", action="store_true", help="keep the run directory (default: deleted)")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # internal: run the flow with these params (JSON)
    return parser.parse_args(argv)


def orjson_parse_pass(job: Path) -> tuple[float, int, int]:
    """Seconds to read and orjson-parse every input line once; bytes and rows seen."""
    total = rows = 0
    started = time.perf_counter()
    for path in input_files(job):
        data = path.read_bytes()
        total += len(data)
        for line in data.splitlines():
            with contextlib.suppress(orjson.JSONDecodeError):
                orjson.loads(line)
        if path.parent == job:
            rows += sum(1 for line in data.splitlines() if line.strip())
    return time.perf_counter() - started, total, rows


class TreeSampler:
    """Peak summed RSS and CPU seconds of a process and its descendants, sampled on a thread,
    and the peak of the bytes used on the filesystem of ``disk`` beyond its use at the start.

    CPU time is the last sample of each process seen (a process that exits loses at most one
    sampling interval); it shows the work done when other load on the machine inflates wall time.
    """

    def __init__(self, pid: int, disk: Path) -> None:
        self.root = psutil.Process(pid)
        self.peak = 0
        self.cpu: dict[int, float] = {}
        self.disk = disk
        self._disk_start = shutil.disk_usage(disk).used
        self.peak_disk = 0
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
            self.peak_disk = max(self.peak_disk, shutil.disk_usage(self.disk).used - self._disk_start)
            self._stop.wait(SAMPLE_SECONDS)

    def _descendants(self) -> list[psutil.Process]:
        try:
            return self.root.children(recursive=True)
        except psutil.Error:
            return []

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def run_child(params_json: str) -> None:
    """In the child: run the flow once, print wall time, own peak RSS, the manifest timings and the
    trace of the fixed cost (``fixed_cost``).

    The flow is called as ``evidence-stage run`` calls it (flows/cli/console.py): the attempt
    pool's forkserver started before Prefect is imported, and the flow returning once its final
    state is reported, without waiting up to a second for Prefect's heartbeat thread to wake.
    So the flow's start and end cost here what they cost a CLI run.
    """
    sys.path.insert(0, str(REPO))
    from flows.params.stage import StageParams, TaskRunnerKind

    params = StageParams(**json.loads(params_json))
    if params.task_runner is TaskRunnerKind.process:
        from flows.execution.forkserver import start_forkserver

        start_forkserver(params)
    clock = time.perf_counter()
    import flows.execution.job
    from flows.cli.console import heartbeat_thread_not_joined
    from flows.stage import stage_flow
    from tests.reliability.peak_rss import own_peak_rss_kib

    imported = time.perf_counter() - clock
    fan_out, fan_out_called = flows.execution.job.fan_out, []

    def traced_fan_out(*args: Any, **kwargs: Any) -> Any:
        fan_out_called.append(time.perf_counter())  # the first group is planned: the fan-out starts
        return fan_out(*args, **kwargs)

    flows.execution.job.fan_out = traced_fan_out  # type: ignore[assignment]
    started, started_epoch = time.perf_counter(), time.time()
    with heartbeat_thread_not_joined():
        result = stage_flow(params)
    wall = time.perf_counter() - started
    manifest = json.loads((Path(result["run_dir"].removeprefix("file://")) / "manifest.json").read_text())
    print(
        json.dumps(
            {
                "wall_s": wall,
                "stage_process_rss_mb": own_peak_rss_kib() / 1024,
                "timings": manifest["timings"],
                "counts": manifest["counts"],
                "fixed_cost": fixed_cost(manifest, started_epoch, fan_out_called[0] - started, wall, imported),
            }
        )
    )


def fixed_cost(manifest: dict[str, Any], called_epoch: float, fan_out_at: float, wall: float, imported: float) -> dict[str, float]:
    """Where the run's time outside its attempts went (issue 42's fixed cost), in seconds.

    ``prefect_start_s``: from the flow call to the flow body's start (the manifest's
    ``started_at``): Prefect's flow run start, not counted as ours. ``before_fan_out_s``: from the
    body's start to the fan-out's start: resolving the run, the attempt pool, and the discovery
    the fan-out waited for (``discover_s`` of it). ``tail_s``: the manifest's, from the last
    attempt's end to ``manifest.json``. ``after_manifest_s``: ``report.html``, ``_SUCCESS``,
    ``LATEST``, the artifacts and events, and Prefect's end of the flow run (not told apart).
    ``ours_s`` adds the last three: the target is 0.5 s at 2,000 rollouts. ``import_s`` (Prefect's
    and the stage's modules) is outside ``wall_s`` and shown for reference.
    """
    timings = manifest["timings"]
    body = datetime.fromisoformat(manifest["run"]["started_at"]).timestamp() - called_epoch
    manifest_at = fan_out_at + timings["fan_out_s"] + timings["tail_s"]
    parts = {
        "import_s": imported,
        "prefect_start_s": body,
        "before_fan_out_s": fan_out_at - body,
        "discover_s": timings["discover_s"],
        "tail_s": timings["tail_s"],
        "after_manifest_s": wall - manifest_at,
    }
    parts["ours_s"] = parts["before_fan_out_s"] + parts["tail_s"] + parts["after_manifest_s"]
    return {name: round(seconds, 3) for name, seconds in parts.items()}


def run_stage(job: Path, output: Path, args: argparse.Namespace, api_url: str) -> tuple[dict[str, Any], TreeSampler]:
    params: dict[str, Any] = {
        "rollouts": str(job_rollouts(job)),
        "capture_dir": str(job / "model-calls"),
        "output": str(output),
        "session_id": "bench",
        "agent_version": "1.0.0",
    }
    for name in ("task_runner", "max_workers", "attempts_per_task"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    child = subprocess.Popen(
        [sys.executable, __file__, "--rollouts", "0", "--child", json.dumps(params)],
        env=cli_env(api_url),
        cwd=REPO,
        stdout=subprocess.PIPE,
    )
    with TreeSampler(child.pid, output.parent) as sampler:
        out, _ = child.communicate()
    if child.returncode != 0:
        raise RuntimeError(f"stage child failed with exit code {child.returncode}")
    return json.loads(out.decode().strip().splitlines()[-1]), sampler


def _cpu_seconds(server: Server) -> float:
    """CPU seconds of the server we started (and its workers) so far; 0 when it is not ours."""
    if server.process is None:
        return 0.0
    root = psutil.Process(server.process.pid)
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        times = proc.cpu_times()
        total += times.user + times.system
    return total


def in_task_seconds(timings: dict[str, float]) -> float:
    """Work done inside task bodies (and the flow's own rendering), parallel fan-out divided out;
    of discovery and the reduce, their parts before and after the fan-out (the rest runs beside it)."""
    fan_out = timings["in_task_s"] / max(1, timings["fan_out_parallelism"])
    return timings["discover_s"] + fan_out + timings["reduce_s"] + timings["report_s"]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        run_child(args.child)
        return 0
    job, generated_s = ensure_job(args)
    parse_s, input_bytes, rows = orjson_parse_pass(job)  # also warms the page cache for the stage
    scratch = Path(tempfile.mkdtemp(prefix="evidence-stage-bench-"))
    try:
        with prefect_server(args.api_url, scratch / "prefect-home") as server:
            server_cpu = _cpu_seconds(server)
            child, sampler = run_stage(job, scratch / "out", args, server.api_url)
            server_cpu = None if server.process is None else _cpu_seconds(server) - server_cpu
        run_dir_bytes = sum(path.stat().st_size for path in (scratch / "out").rglob("*") if path.is_file())
    finally:
        if not args.keep_output:
            shutil.rmtree(scratch, ignore_errors=True)
    wall, timings = child["wall_s"], child["timings"]
    overhead = wall - in_task_seconds(timings)
    print(
        json.dumps(
            {
                "rows": rows,
                "input_mb": round(input_bytes / MB, 1),
                "wall_s": round(wall, 2),
                "rows_per_s": round(rows / wall, 1),
                "mb_per_s": round(input_bytes / MB / wall, 1),
                "peak_rss_mb": round(sampler.peak / MB, 1),
                "stage_process_rss_mb": round(child["stage_process_rss_mb"], 1),
                "prefect_overhead_s": round(overhead, 2),
                "prefect_overhead_pct": round(100 * overhead / wall, 1),
                "tail_s": timings["tail_s"],
                "orjson_parse_s": round(parse_s, 2),
                "stage_cpu_s": round(sum(sampler.cpu.values()), 1),
                "peak_disk_mb": round(sampler.peak_disk / MB, 1),
                "run_dir_mb": round(run_dir_bytes / MB, 1),
                "server_cpu_s": None if server_cpu is None else round(server_cpu, 1),
                "load_average_1m": round(os.getloadavg()[0], 2),
                "server_start_s": None if server.start_s is None else round(server.start_s, 1),
                "job_generation_s": None if generated_s is None else round(generated_s, 1),
                "shape": {
                    "rollouts": args.rollouts,
                    "calls_per_rollout": args.calls_per_rollout,
                    "history_bytes": args.history_bytes,
                    "seed": args.seed,
                },
                "settings": {"task_runner": args.task_runner, "max_workers": args.max_workers, "attempts_per_task": args.attempts_per_task},
                "timings": timings,
                "fixed_cost": child["fixed_cost"],
                "counts": child["counts"]["by_status"],
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
