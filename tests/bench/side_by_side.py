"""Benchmark: NeMo Gym 0.7.0 and ``evidence-stage run`` on the same job, back to back, in one run.

Usage (from the repository root; the oracle interpreter built with ../shared/oracle/setup.sh):

    .venv/bin/python tests/bench/side_by_side.py [--rollouts 2000] [--pairs N] [--api-url URL]

A speed claim is a ratio measured on one machine at one time (../shared/oracle/README.md), so
both sides run here one after the other on the same generated job: first the oracle's
``baseline.sh JOBDIR`` (0.7.0's collect+project+ng_perf, health with 2 workers, per-row ATIF),
then the stage's whole ``evidence-stage run`` wall time, Python start-up and imports included,
against a running Prefect server (``--api-url``, else one started here and not timed).

Prints three JSON lines per pair: ``{"side": "oracle", "pair", "oracle_s", "cpu_steal_s"}``,
``{"side": "stage", "pair", "stage_s", "cpu_steal_s", "timings"}`` (the run manifest's timings) and ``{"pair", "oracle_s",
"stage_s", "ratio", "tail_s", "rollouts", "attempts", "load_average_1m"}``, where ratio = oracle_s /
stage_s; with ``--pairs N`` (N > 1) a last line ``{"pairs", "ratios", "median_ratio"}``. Each
side starts after ``sync``, so neither pays for writing back the other's outputs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.harness import (
    REPO,
    add_job_arguments,
    add_server_argument,
    cli_env,
    emit,
    ensure_job,
    job_run_args,
    local_manifest,
    prefect_server,
    timed,
    warm_page_cache,
)

DEFAULT_ORACLE = REPO.parent / "shared" / "oracle" / "baseline.sh"
DEFAULT_ORACLE_VENV = REPO.parent / ".venv-gym"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_job_arguments(parser, 2000)
    add_server_argument(parser)
    parser.add_argument(
        "--oracle",
        type=Path,
        default=Path(os.environ.get("EVIDENCE_STAGE_ORACLE", DEFAULT_ORACLE)),
        help="0.7.0's baseline.sh (default: $EVIDENCE_STAGE_ORACLE, else ../shared/oracle/baseline.sh beside the repository)",
    )
    parser.add_argument("--pairs", type=int, default=1, help="oracle-then-stage pairs to time, back to back (default 1)")
    parser.add_argument(
        "--oracle-venv",
        type=Path,
        default=Path(os.environ.get("ORACLE_VENV", DEFAULT_ORACLE_VENV)),
        help="the oracle interpreter's venv (default: $ORACLE_VENV, else ../.venv-gym beside the repository)",
    )
    return parser.parse_args(argv)


def run_oracle(oracle: Path, venv: Path, job: Path, out: Path) -> dict[str, float]:
    """``baseline.sh`` times itself; its last stdout line is ``{"oracle_s": ..., "outputs": ...}``."""
    done = subprocess.run(
        ["bash", str(oracle), str(job), str(out)],
        env={**os.environ, "ORACLE_VENV": str(venv)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def steal_seconds() -> float:
    """CPU time the hypervisor gave to others, all cores together (``/proc/stat``): a virtual
    machine whose host is busy runs both sides slower, each by however much it lost."""
    with open("/proc/stat") as stat:
        fields = stat.readline().split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    job, _ = ensure_job(args)
    warm_page_cache(job)
    ratios = []
    with tempfile.TemporaryDirectory(prefix="evidence-stage-side-by-side-") as scratch:
        root = Path(scratch)
        with prefect_server(args.api_url, root / "prefect-home") as server:
            for pair in range(1, args.pairs + 1):
                out = root / f"pair-{pair}"
                os.sync()  # neither side pays for writing back the other's outputs
                stolen = steal_seconds()
                oracle_s = run_oracle(args.oracle, args.oracle_venv, job, out / "oracle")["oracle_s"]
                emit({"side": "oracle", "pair": pair, "oracle_s": oracle_s, "cpu_steal_s": round(steal_seconds() - stolen, 1)})
                os.sync()
                command = job_run_args(str(job / "rollouts.jsonl"), str(job / "model-calls"), str(out / "stage"), "side-by-side")
                stolen = steal_seconds()
                stage_s = round(timed(command, cli_env(server.api_url)), 2)
                manifest = local_manifest(out / "stage", "side-by-side")
                emit(
                    {
                        "side": "stage",
                        "pair": pair,
                        "stage_s": stage_s,
                        "cpu_steal_s": round(steal_seconds() - stolen, 1),
                        "timings": manifest["timings"],
                    }
                )
                ratios.append(round(oracle_s / stage_s, 2))
                emit(
                    {
                        "pair": pair,
                        "oracle_s": oracle_s,
                        "stage_s": stage_s,
                        "ratio": ratios[-1],
                        "tail_s": manifest["timings"]["tail_s"],
                        "rollouts": args.rollouts,
                        "attempts": manifest["counts"]["attempts"],
                        "load_average_1m": round(os.getloadavg()[0], 2),
                    }
                )
                shutil.rmtree(out)
    if args.pairs > 1:
        emit({"pairs": args.pairs, "ratios": ratios, "median_ratio": statistics.median(ratios)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
