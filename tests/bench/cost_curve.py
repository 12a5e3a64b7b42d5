"""Benchmark: the stage's cost curve, the same job shape at growing sizes (BENCHMARKS.md, the cost curve).

Usage (from the repository root; jobs are generated once and cached, 50,000 rollouts take about
12 GB and the run as much again while it works):

    .venv/bin/python tests/bench/cost_curve.py [--sizes 20,2000,10000,50000] [--api-url URL]

Runs ``tests/bench/bench_stage.py`` once per size, one after the other against one Prefect
server, and prints its JSON line for each, then one line per size: attempts, wall seconds, the
manifest's tail_s (from the last attempt's end to publishing), CPU
seconds of the stage's process tree per attempt (all of it, and beyond the smallest size's
CPU: what one more attempt costs once the run's fixed cost is paid), peak RSS of the process
tree and of the flow process, the most disk the run held while it worked and what its run
directory holds at the end, each also per attempt. The last line gives the spread of the
per-attempt CPU across the sizes above the smallest, (max - min) / min.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.harness import REPO, add_server_argument, prefect_server

BENCH = REPO / "tests" / "bench" / "bench_stage.py"


def measured(rollouts: int, api_url: str, jobs_root: Path) -> dict[str, Any]:
    """bench_stage.py's JSON line for one size."""
    out = subprocess.run(
        [sys.executable, str(BENCH), "--rollouts", str(rollouts), "--api-url", api_url, "--jobs-root", str(jobs_root)],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20,2000,10000,50000", help="rollouts per job, smallest first (default 20,2000,10000,50000)")
    parser.add_argument("--jobs-root", type=Path, default=Path(tempfile.gettempdir()) / "evidence-stage-bench")
    add_server_argument(parser)
    args = parser.parse_args(argv)
    sizes = sorted(int(size) for size in args.sizes.split(","))
    with (
        tempfile.TemporaryDirectory(prefix="evidence-stage-curve-") as home,
        prefect_server(args.api_url, Path(home) / "prefect-home") as server,
    ):
        results = []
        for rollouts in sizes:
            result = measured(rollouts, server.api_url, args.jobs_root)
            print(json.dumps(result), flush=True)
            results.append(result)
    smallest = results[0]
    base_attempts, base_cpu = sum(smallest["counts"].values()), smallest["stage_cpu_s"]
    marginal = []
    for rollouts, result in zip(sizes, results, strict=True):
        attempts = sum(result["counts"].values())
        beyond = (result["stage_cpu_s"] - base_cpu) / (attempts - base_attempts) if attempts > base_attempts else None
        if beyond is not None:
            marginal.append(beyond)
        print(
            json.dumps(
                {
                    "rollouts": rollouts,
                    "attempts": attempts,
                    "wall_s": result["wall_s"],
                    "tail_s": result["tail_s"],
                    "cpu_ms_per_attempt": round(1000 * result["stage_cpu_s"] / attempts, 2),
                    "marginal_cpu_ms_per_attempt": None if beyond is None else round(1000 * beyond, 2),
                    "peak_rss_mb": result["peak_rss_mb"],
                    "stage_process_rss_mb": result["stage_process_rss_mb"],
                    "peak_disk_mb": result["peak_disk_mb"],
                    "run_dir_mb": result["run_dir_mb"],
                    "peak_disk_kb_per_attempt": round(1024 * result["peak_disk_mb"] / attempts, 1),
                    "input_mb": result["input_mb"],
                }
            ),
            flush=True,
        )
    if marginal:
        print(json.dumps({"marginal_cpu_spread": round((max(marginal) - min(marginal)) / min(marginal), 3)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
