"""Benchmark: start-up, ``evidence-stage --help`` and the example job against a running server.

Usage (from the repository root):

    .venv/bin/python tests/bench/startup.py [--runs 3] [--api-url URL]

A small job is mostly start-up: Python, the imports a subcommand needs, the flow run's
bookkeeping with the Prefect server. Both figures are whole wall times of a fresh
``evidence-stage`` process; the example job (tests/data/example_job) runs against a running
Prefect server (``--api-url``, else one started here and not timed), each run into a new run
directory. Each is measured ``--runs`` times, so a busy machine shows as spread.

Prints two JSON lines: ``{"what": "--help", "best_s", "runs_s"}`` and ``{"what": "example job",
"best_s", "runs_s", "attempts", "timings"}`` (timings: the last run's manifest).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.harness import CLI, REPO, add_server_argument, cli_env, emit, job_run_args, local_manifest, prefect_server, timed

EXAMPLE_JOB = REPO / "tests" / "data" / "example_job"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    add_server_argument(parser)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="evidence-stage-startup-") as scratch:
        root = Path(scratch)
        with prefect_server(args.api_url, root / "prefect-home") as server:
            env = cli_env(server.api_url)
            help_s = [round(timed([str(CLI), "--help"], env), 3) for _ in range(args.runs)]
            emit({"what": "--help", "best_s": min(help_s), "runs_s": help_s})
            rollouts, captures = str(EXAMPLE_JOB / "rollouts.jsonl"), str(EXAMPLE_JOB / "model-calls")
            example_s = [round(timed(job_run_args(rollouts, captures, str(root / "out"), f"run-{n}"), env), 2) for n in range(args.runs)]
            manifest = local_manifest(root / "out", f"run-{args.runs - 1}")
    emit(
        {
            "what": "example job",
            "best_s": min(example_s),
            "runs_s": example_s,
            "attempts": manifest["counts"]["attempts"],
            "timings": manifest["timings"],
        }
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
