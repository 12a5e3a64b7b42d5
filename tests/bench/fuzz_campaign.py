"""A long fuzz campaign of the attempt engine and the run's folds, or of whole runs; print ONE JSON line.

Usage (from the repository root):

    .venv/bin/python tests/bench/fuzz_campaign.py --examples 20000 --seed 1
    .venv/bin/python tests/bench/fuzz_campaign.py --runs 3 --rows 150 --seed 1

The examples are the fuzz test's (``tests/mutation.py``), many more of them. Fields: examples
(attempts run), batches (fold runs), seconds, statuses (outcomes per status), failed_reasons
(``failed`` outcomes per exception type and step: our code met a value it could not handle,
which the contract allows but each one is worth a look), failures (contract violations per
exception type and the evidence frame that raised or the check that failed) and, per failure
kind, the first message. ``--save DIR`` pickles each failing batch there, to replay it with
``tests.mutation.check_batch``.

``--runs N`` runs the stage itself instead (``tests/bench/whole_runs.py``): N jobs of ``--rows``
lines whose identity and scored fields, failures-sidecar lines and materialized-inputs lines
hold the hostile shapes, each through ``evidence-stage run``, ``tables``, ``select`` and
``compare`` against a clean run of the same seed rows.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import re
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from evidence import Status  # noqa: E402
from tests.mutation import check_batch, examples, load_seeds  # noqa: E402


def failure_kind(exc: BaseException) -> str:
    """``Type at evidence/module.py:line`` (the innermost library frame), or the failed check's name."""
    if isinstance(exc, AssertionError):
        return f"AssertionError({str(exc).split(':')[0]})"
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if "/evidence/" in frame.filename]
    where = f" at {Path(frames[-1].filename).relative_to(REPO)}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}{where}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--save", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=0, help="whole runs instead of engine examples")
    parser.add_argument("--rows", type=int, default=150, help="lines of each whole run's job")
    args = parser.parse_args()
    if args.runs:
        from tests.bench.whole_runs import campaign

        print(json.dumps(campaign(args.runs, args.rows, args.seed)))
        return
    rng = random.Random(args.seed)
    statuses: Counter[str] = Counter()
    failed_reasons: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    first: dict[str, str] = {}
    run = batches = 0
    started = time.perf_counter()
    for batch in examples(rng, load_seeds(), args.examples, args.batch):
        batches += 1
        run += len(batch.examples)
        try:
            outcomes = check_batch(batch)
        except Exception as exc:  # noqa: BLE001 - every contract violation is counted, the campaign goes on
            kind = failure_kind(exc)
            failures[kind] += 1
            first.setdefault(kind, f"{type(exc).__name__}: {exc}"[:300])
            if args.save is not None:
                args.save.mkdir(parents=True, exist_ok=True)
                (args.save / f"failure-{batches}.pickle").write_bytes(pickle.dumps(batch))
            continue
        for outcome in outcomes:
            statuses[outcome.status.value] += 1
            if outcome.status is Status.FAILED:
                for reason in outcome.reason.split("; "):
                    failed_reasons[re.sub(r":.*\(in ", " (in ", reason)] += 1
    print(
        json.dumps(
            {
                "examples": run,
                "batches": batches,
                "seed": args.seed,
                "seconds": round(time.perf_counter() - started, 1),
                "statuses": dict(statuses),
                "failed_reasons": dict(failed_reasons.most_common()),
                "failures": dict(failures.most_common()),
                "first_failure": first,
            }
        )
    )


if __name__ == "__main__":
    main()
