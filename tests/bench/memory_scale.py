"""Benchmark: peak RSS of a run over 2,000 vs 20,000 attempts of the same size (README, guarantee 6).

Not collected by the default test run. Each run is a fresh process (tests/reliability/peak_rss.py)
against one Prefect server: ``PREFECT_API_URL`` when set, else a temporary test server.

Usage: python tests/bench/memory_scale.py [--small 2000] [--large 20000] [--calls-per-rollout 2]
       [--history-bytes 50]
Prints one JSON line per job and the ratio of the peak RSS figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.jobgen import generate_job  # noqa: E402
from tests.reliability.memory import measure_run  # noqa: E402


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=2000)
    parser.add_argument("--large", type=int, default=20000)
    parser.add_argument("--calls-per-rollout", type=int, default=2)
    parser.add_argument("--history-bytes", type=int, default=50)
    args = parser.parse_args(argv)
    figures = {}
    with tempfile.TemporaryDirectory(prefix="evidence-stage-memory-") as scratch, prefect_api() as api:
        for size in (args.small, args.large):
            job = generate_job(
                Path(scratch) / f"job{size}", rollouts=size, calls_per_rollout=args.calls_per_rollout, history_bytes=args.history_bytes
            )
            figures[size] = measure_run(job, Path(scratch) / f"out{size}", api)
            print(json.dumps({"rollouts": size, "job_bytes": job.total_bytes, **figures[size]}), flush=True)
    ratio = figures[args.large]["peak_mib"] / figures[args.small]["peak_mib"]
    print(json.dumps({"peak_ratio": round(ratio, 3), "within_20_percent": ratio <= 1.2}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
