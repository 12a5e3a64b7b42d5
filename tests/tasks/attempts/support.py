"""What the attempt tests share: a run context over a job's inputs, the bundled example's by default."""

from __future__ import annotations

from pathlib import Path

from tasks.attempts.context import RunContext
from tasks.inputs.shards import Shard
from tasks.storage import Location
from tests.conftest import EXAMPLE_JOB

EXAMPLE_ROLLOUTS = Location(str(EXAMPLE_JOB / "rollouts.jsonl"))
EXAMPLE_CAPTURES = Location(str(EXAMPLE_JOB / "model-calls"))


def run_context(run_dir: Path, main: Location = EXAMPLE_ROLLOUTS, capture_dir: Location = EXAMPLE_CAPTURES) -> RunContext:
    """A run of ``main`` (one shard) into ``run_dir``, no check ignored and no verdict masked."""
    return RunContext(
        run_dir=Location(str(run_dir)),
        job_id="job",
        run_id="run",
        shards=(Shard(main),),
        capture_dir=capture_dir,
        session_id="s",
        agent_version="1.0.0",
        exporter_version="0.0.0",
        ignored_checks=(),
        masked_verdicts=(),
    )
