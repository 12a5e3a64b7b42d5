"""Benchmark: the attempt engine's CPU per attempt, in process, on a generated job.

Usage (from the repository root):

    .venv/bin/python tests/bench/engine_cpu.py [--rollouts 2000] [--limit N] [--profile 25]

Reads the job's rows (``rollouts.jsonl`` as main rows, ``rollouts_failures.jsonl`` as sidecar
rows) and each row's capture file into memory first, then times ``evidence.process_attempt``
alone over them (``time.process_time``: this process's CPU), the same call a worker of the
attempt pool makes per attempt, without storage, parts or Prefect. ``--profile N`` runs it
again under cProfile and prints the N functions with the most cumulative time.

Prints one JSON line: ``{"attempts", "main", "cpu_s", "ms_per_attempt", "rollouts", "outcomes_sha256"}``.
``outcomes_sha256`` hashes every attempt's outcome as its part encodes it (without the timing),
so a change meant to leave every output byte as it was can be checked on the whole job: the
hash before and after must be equal.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import pstats
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from evidence import AttemptConfig, AttemptInputs, AttemptPart, CaptureFiles, Exporter, encode_part, process_attempt
from evidence.capture.merge import CAPTURE_SUFFIX
from evidence.identity import capture_file_id
from tests.bench.harness import add_job_arguments, emit, ensure_job

CONFIG = AttemptConfig("bench", "1.0.0", Exporter(name="evidence-stage", version="0"), (), "rollouts.jsonl")

Inputs = list[tuple[bytes, bytes | None, int | None]]


def load(job: Path, limit: int | None) -> Inputs:
    """Each attempt's row, capture bytes (None without one) and main line (None for a sidecar row)."""
    found: Inputs = []
    for name, main in (("rollouts.jsonl", True), ("rollouts_failures.jsonl", False)):
        path = job / name
        if not path.exists():
            continue
        for number, line in enumerate(path.read_bytes().splitlines(), start=1):
            rollout_id = capture_file_id(orjson.loads(line))
            capture = job / "model-calls" / f"{rollout_id}{CAPTURE_SUFFIX}" if rollout_id else None
            data = capture.read_bytes() if capture is not None and capture.exists() else None
            found.append((line, data, number if main else None))
    return found[:limit] if limit else found


def run(inputs: Inputs, digest: hashlib._Hash | None = None) -> None:
    for row, capture, main_line in inputs:
        files = CaptureFiles(jsonl=capture, incomplete=False) if capture is not None else None
        outcome = process_attempt(AttemptInputs(row, files), CONFIG, main_line=main_line)
        if digest is not None:
            for piece in encode_part(AttemptPart("", 0.0, outcome)):
                digest.update(piece)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_job_arguments(parser, 2000)
    parser.add_argument("--limit", type=int, help="time only the first N attempts")
    parser.add_argument("--profile", type=int, default=0, help="then profile, printing the top N functions")
    args = parser.parse_args(argv)
    job, _ = ensure_job(args)
    inputs = load(job, args.limit)
    run(inputs[:20])  # imports and first-call caches are not per-attempt costs
    started = time.process_time()
    run(inputs)
    cpu = time.process_time() - started
    main_rows = sum(1 for _, _, line in inputs if line is not None)
    digest = hashlib.sha256()
    run(inputs, digest)
    emit(
        {
            "attempts": len(inputs),
            "main": main_rows,
            "cpu_s": round(cpu, 3),
            "ms_per_attempt": round(1000 * cpu / len(inputs), 3),
            "rollouts": args.rollouts,
            "outcomes_sha256": digest.hexdigest(),
        }
    )
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(run, inputs)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.profile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
