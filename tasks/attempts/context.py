"""The run context: what every attempt task needs to know about its run (small, picklable)."""

from __future__ import annotations

from dataclasses import dataclass

from evidence import AttemptConfig, Exporter
from tasks.discover.refs import MAIN, AttemptRef
from tasks.inputs.shards import Shard
from tasks.rundir import ROLLOUTS_FILE, RunPaths
from tasks.storage import Location

EXPORTER_NAME = "evidence-stage"  # ATIF extra.nemo_gym.exporter.name


@dataclass(frozen=True)
class RunContext:
    """Locations and output-changing parameters of one run."""

    run_dir: Location
    job_id: str
    run_id: str
    shards: tuple[Shard, ...]  # the job's rollouts files in order; one for a one-file job
    capture_dir: Location
    session_id: str
    agent_version: str
    exporter_version: str
    ignored_checks: tuple[str, ...]
    masked_verdicts: tuple[str, ...]  # the verdicts the clean scores mask (RecordedParams.masked_verdicts)
    resume: bool = False

    def source(self, attempt: AttemptRef) -> Location:
        """The input file an attempt was read from: its shard's rollouts file or failures sidecar."""
        shard = self.shards[attempt.shard or 0]
        location = shard.main if attempt.source == MAIN else shard.failures
        if location is None:
            raise ValueError(f"no input file for source {attempt.source!r} of {shard.name}")
        return location

    @property
    def has_failures(self) -> bool:
        """Whether any shard has a failures sidecar (the run then writes ``rollouts_failures.jsonl``)."""
        return any(shard.failures is not None for shard in self.shards)

    @property
    def attempt_config(self) -> AttemptConfig:
        """What the attempt engine needs of this run."""
        return AttemptConfig(
            session_id=self.session_id,
            agent_version=self.agent_version,
            exporter=Exporter(name=EXPORTER_NAME, version=self.exporter_version),
            ignored_checks=self.ignored_checks,
            verdict_source=self.verdict_source,
        )

    @property
    def paths(self) -> RunPaths:
        return RunPaths(self.run_dir)

    @property
    def verdict_source(self) -> str:
        """How health locators name the enriched rollouts file: its name inside the run directory.

        0.7.0 quotes the path it was given; the stage's path holds the run id, so quoting it
        would make two runs of the same job write different verdicts (README, guarantee 3).
        """
        return ROLLOUTS_FILE
