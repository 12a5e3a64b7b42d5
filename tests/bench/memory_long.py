"""Benchmark: a worker's peak RSS on long rollouts against the engine's bound (README, guarantee 6).

Not collected by the default test run. Generates (or reuses) a job of a few long rollouts (rows
of tens of MB, captures of tens of MB), then processes each main attempt in a fresh process
(tests/reliability/attempt_peak.py) as a worker does: capture read, engine, part encoded.

Usage: python tests/bench/memory_long.py [--rollouts 4] [--calls-per-rollout 40]
       [--history-bytes 30000] [--job DIR]
Prints one JSON line per attempt ({"line", "row_bytes", "capture_bytes", "peak_mib",
"bound_mib", "ratio"}) and a last line with the largest ratio of peak to bound.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.jobgen import generate_job  # noqa: E402
from tests.reliability.attempt_peak import measure  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=4)
    parser.add_argument("--calls-per-rollout", type=int, default=40)
    parser.add_argument("--history-bytes", type=int, default=30000)
    parser.add_argument("--job", type=Path, help="an existing job directory instead of a generated one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evidence-stage-memory-long-") as scratch:
        job = args.job or Path(scratch) / "job"
        if args.job is None:
            generate_job(job, rollouts=args.rollouts, calls_per_rollout=args.calls_per_rollout, history_bytes=args.history_bytes, seed=3)
        lines = sum(1 for line in (job / "rollouts.jsonl").open("rb") if line.strip())
        worst = 0.0
        for line in range(1, lines + 1):
            figures = measure(job, line)
            figures["ratio"] = round(figures["peak_mib"] / figures["bound_mib"], 3)
            worst = max(worst, figures["ratio"])
            print(json.dumps({k: figures[k] for k in ("line", "row_bytes", "capture_bytes", "peak_mib", "bound_mib", "ratio")}), flush=True)
        print(json.dumps({"attempts": lines, "worst_peak_to_bound": worst}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
