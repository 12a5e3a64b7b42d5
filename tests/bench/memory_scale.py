"""Benchmark: the flow process's peak RSS as the job grows, same small rows (README, guarantee 6; issue 42's cost curve).

Not collected by the default test run. Each run is a fresh process (tests/reliability/peak_rss.py)
against one Prefect server: ``PREFECT_API_URL`` when set, else a temporary test server. Each
job is generated into a scratch folder (as shards of at most 10,000 rollouts past that size:
``tests/jobgen.py`` holds a whole job in memory), run once, and deleted with its run before
the next size, so the disk holds one size at a time (200,000 rollouts of the default shape:
about 2 GB of job and 4 GB of run).

Usage: python tests/bench/memory_scale.py [--sizes 2000,10000,50000,200000] [--calls-per-rollout 1]
       [--history-bytes 50] [--scratch DIR]
Prints one JSON line per size (its peak, its growth over the smallest size's peak per extra
attempt, its ratio to the smallest's peak), then one line with the targets: the peak at 50,000
rollouts at most 1.15 x the smallest's, and under 600 MB at 200,000.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.jobgen import generate_job, generate_shards  # noqa: E402
from tests.reliability.memory import measure_inputs  # noqa: E402

SHARD_ROLLOUTS = 10_000
RATIO_SIZE, RATIO_LIMIT = 50_000, 1.15
CEILING_SIZE, CEILING_MB = 200_000, 600


@contextlib.contextmanager
def prefect_api() -> Iterator[str]:
    """The Prefect API to point the runs at: the configured one, or a temporary test server."""
    if os.environ.get("PREFECT_API_URL"):
        yield os.environ["PREFECT_API_URL"]
        return
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield str(PREFECT_API_URL.value())


def make_job(folder: Path, rollouts: int, calls_per_rollout: int, history_bytes: int) -> tuple[Path, Path]:
    """One job of ``rollouts`` small rows; its ``--rollouts`` (one file, or a glob of shards past
    ``SHARD_ROLLOUTS``) and its capture folder."""
    shape: dict[str, Any] = {"calls_per_rollout": calls_per_rollout, "history_bytes": history_bytes}
    if rollouts <= SHARD_ROLLOUTS:
        job = generate_job(folder, rollouts=rollouts, **shape)
        return job.rollouts, job.capture_dir
    generate_shards(folder, rollouts=rollouts, shard_rollouts=SHARD_ROLLOUTS, **shape)
    return folder / "shard-??.jsonl", folder / "model-calls"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,10000,50000,200000", help="rollouts per job, smallest first")
    parser.add_argument("--calls-per-rollout", type=int, default=1)
    parser.add_argument("--history-bytes", type=int, default=50)
    parser.add_argument("--scratch", type=Path, default=None, help="where jobs and runs go while measured (default: a temporary folder)")
    args = parser.parse_args(argv)
    sizes = sorted(int(size) for size in args.sizes.split(","))
    peaks: dict[int, float] = {}
    first: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory(prefix="evidence-stage-memory-", dir=args.scratch) as scratch, prefect_api() as api:
        for size in sizes:
            job_dir, out_dir = Path(scratch) / f"job{size}", Path(scratch) / f"out{size}"
            try:
                rollouts, captures = make_job(job_dir, size, args.calls_per_rollout, args.history_bytes)
                figures = measure_inputs(rollouts, captures, out_dir, api)
            finally:
                shutil.rmtree(job_dir, ignore_errors=True)
                shutil.rmtree(out_dir, ignore_errors=True)
            peaks[size] = figures["peak_mib"]
            if first is None:
                first = figures
            extra = figures["attempts"] - first["attempts"]
            growth = (figures["peak_mib"] - first["peak_mib"]) * 1024 / extra if extra else None
            line = {"rollouts": size, **figures, "peak_mb": round(figures["peak_mib"] * 2**20 / 1e6, 1)}
            line |= {"ratio_to_smallest": round(figures["peak_mib"] / first["peak_mib"], 3)}
            line |= {"growth_kib_per_extra_attempt": None if growth is None else round(growth, 3)}
            print(json.dumps(line), flush=True)
    targets: dict[str, Any] = {}
    if RATIO_SIZE in peaks:
        ratio = peaks[RATIO_SIZE] / peaks[sizes[0]]
        targets |= {f"ratio_{RATIO_SIZE}": round(ratio, 3), f"ratio_within_{RATIO_LIMIT}": ratio <= RATIO_LIMIT}
    if CEILING_SIZE in peaks:
        megabytes = peaks[CEILING_SIZE] * 2**20 / 1e6
        targets |= {f"peak_mb_{CEILING_SIZE}": round(megabytes, 1), f"under_{CEILING_MB}_mb": megabytes < CEILING_MB}
    print(json.dumps(targets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
