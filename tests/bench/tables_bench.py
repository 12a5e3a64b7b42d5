"""Benchmark: what the analysis tables and the viewer cost a large run, and TABLES.md's queries over it.

Usage (from the repository root):

    .venv/bin/python tests/bench/tables_bench.py [--rollouts 10000] [--calls-per-rollout 8] [--api-url URL] [--keep DIR]

Generates the job (``tests/jobgen.py``; cached under ``--jobs-root``), runs ``evidence-stage
run`` on it as job ``example_job``, run ``r1`` (so TABLES.md's queries read it unchanged),
sampling the peak RSS of the CLI and its workers, then prints:

* ``{"what": "stage run", "wall_s", "peak_rss_mib", "timings"}``: the run, its manifest's timings
  (``tables_s`` is the reduce's writing of ``tables/`` and ``viewer/``);
* ``{"what": "outputs", "tables_bytes", "viewer_bytes", "rows"}``;
* one ``{"what": "query", "number", "best_s", "rows"}`` per ``sql`` block of TABLES.md, run
  with DuckDB from the folder holding ``out/`` (best of 3, a fresh connection each).

The engine's share (each row's ``RowFacts`` and ``ViewFacts``, made where it is decoded) is
in the attempts' time: ``tests/bench/engine_cpu.py --profile`` shows it per function.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.bench_stage import TreeSampler
from tests.bench.harness import (
    CLI,
    REPO,
    add_job_arguments,
    add_server_argument,
    cli_env,
    emit,
    ensure_job,
    job_rollouts,
    prefect_server,
)
from tests.tasks.tables.test_doc import DOC, QUERY

QUERY_RUNS = 3


def run_stage(job: Path, root: Path, api_url: str) -> Path:
    """The stage's run of ``job`` under ``root/out``, timed and sampled; its run directory."""
    command = [str(CLI), "run", "--rollouts", str(job_rollouts(job)), "--capture-dir", str(job / "model-calls")]
    command += ["--output", str(root / "out"), "--job-id", "example_job", "--run-id", "r1"]
    started = time.perf_counter()
    child = subprocess.Popen(command, cwd=REPO, env=cli_env(api_url), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with TreeSampler(child.pid, root) as sampler:
        _, errors = child.communicate()
    wall = time.perf_counter() - started
    if child.returncode != 0:
        raise RuntimeError(f"evidence-stage run failed ({child.returncode}): {errors.decode()[-2000:]}")
    run_dir = root / "out" / "example_job" / "runs" / "r1"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    emit({"what": "stage run", "wall_s": round(wall, 2), "peak_rss_mib": round(sampler.peak / 2**20, 1), "timings": manifest["timings"]})
    return run_dir


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def run_queries(root: Path) -> None:
    import duckdb

    os.chdir(root)  # the queries name their files relative to the folder holding out/
    for number, match in enumerate(QUERY.finditer(DOC.read_text()), start=1):
        seconds, rows = [], 0
        for _ in range(QUERY_RUNS):
            connection = duckdb.connect()
            started = time.perf_counter()
            rows = len(connection.sql(match.group("sql")).fetchall())
            seconds.append(time.perf_counter() - started)
            connection.close()
        emit({"what": "query", "number": number, "best_s": round(min(seconds), 3), "rows": rows})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_job_arguments(parser, 10_000)
    add_server_argument(parser)
    parser.add_argument("--keep", type=Path, help="run under this folder and keep it (default: a temporary folder, deleted)")
    args = parser.parse_args(argv)
    job, generated = ensure_job(args)
    if generated is not None:
        emit({"what": "job generated", "seconds": round(generated, 1), "job": str(job)})
    with tempfile.TemporaryDirectory(prefix="evidence-stage-tables-bench-") as scratch:
        root = args.keep or Path(scratch)
        with prefect_server(args.api_url, Path(scratch) / "prefect") as server:
            run_dir = run_stage(job, root, server.api_url)
        manifest = json.loads((run_dir / "manifest.json").read_text())
        emit(
            {
                "what": "outputs",
                "tables_bytes": folder_bytes(run_dir / "tables"),
                "viewer_bytes": folder_bytes(run_dir / "viewer"),
                "rows": manifest["counts"]["rows"],
            }
        )
        run_queries(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
