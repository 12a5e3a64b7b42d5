"""``run --follow`` on a replayed job: from the producer's last file to ``_SUCCESS``, and what each snapshot costs.

A generated job (``tests/jobgen.py``, cached) is replayed into a fresh folder by ``tests/producer.py``
at ``--rows-per-second`` while the stage follows it in this process against a running Prefect
server (``--api-url``, else one is started). Prints one JSON line per snapshot: its seconds on the
snapshot thread (``snapshot_s``), of which the reduce's (``reduce_s``: ``RunFolds.standing``, the
documents made from the folds), the rows the tail had read and the attempts folded; and one for
the end: the seconds from the aggregate file to ``_SUCCESS`` and the final pass's timings (the
manifest's; ``discover_s`` there is the plan made from the tail, or a full discovery where the
follow fell back to the full pass).

Usage: python tests/bench/follow_latency.py [--rollouts 2000] [--rows-per-second 200] [--snapshot-every 5] [--api-url URL]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.harness import add_job_arguments, add_server_argument, emit, ensure_job, prefect_server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_job_arguments(parser, rollouts=2000)
    add_server_argument(parser)
    parser.add_argument("--rows-per-second", type=float, default=200.0)
    parser.add_argument("--snapshot-every", type=float, default=5.0)
    args = parser.parse_args(argv)
    template, _ = ensure_job(args)
    with tempfile.TemporaryDirectory(prefix="follow-bench-") as scratch, prefect_server(args.api_url, Path(scratch) / "prefect") as server:
        os.environ.update(PREFECT_API_URL=server.api_url, PREFECT_LOGGING_LEVEL="WARNING", PREFECT_SERVER_ANALYTICS_ENABLED="false")
        from flows.execution import snapshots
        from flows.params.stage import StageParams
        from flows.stage import stage_flow
        from tasks.reduce.outputs import RunFolds
        from tests.producer import Producer

        publish, standing = snapshots.publish_snapshot, RunFolds.standing
        reduce_s: dict[int, float] = {}  # snapshot thread -> the reduce's seconds of its snapshot

        def timed_standing(folds: RunFolds) -> Any:
            started = time.perf_counter()
            result = standing(folds)
            reduce_s[threading.get_ident()] = time.perf_counter() - started
            reduce_s[-threading.get_ident()] = result.counts.attempts
            return result

        def timed_snapshot(*call: Any) -> Any:
            started = time.perf_counter()
            status = publish(*call)
            me = threading.get_ident()
            seconds = {"snapshot_s": round(time.perf_counter() - started, 3), "reduce_s": round(reduce_s.pop(me, 0.0), 3)}
            emit({**seconds, "rows": status.rows, "failures": status.failures, "folded": reduce_s.pop(-me, 0)})
            return status

        RunFolds.standing = timed_standing  # type: ignore[method-assign]
        snapshots.publish_snapshot = timed_snapshot
        job, output = Path(scratch) / "job", Path(scratch) / "out"
        producer = Producer(template, job, rows_per_second=args.rows_per_second)
        threading.Thread(target=producer.run, daemon=True).start()
        params = StageParams(
            rollouts=str(job / "rollouts.jsonl"),
            capture_dir=str(job / "model-calls"),
            output=str(output),
            job_id="bench",
            run_id="follow",
            follow=True,
            snapshot_every=args.snapshot_every,
        )
        result = stage_flow(params)
        success = output / "bench" / "runs" / "follow" / "_SUCCESS"
        assert producer.finished_at is not None
        emit(
            {
                "rollouts": args.rollouts,
                "rows": result["counts"]["rows"],
                "ended": result["follow_ended"],
                "end_file_to_success_s": round(success.stat().st_mtime - producer.finished_at, 3),
                "final_pass_timings": orjson.loads((success.parent / "manifest.json").read_bytes())["timings"],
            }
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
