"""The run context: what every attempt task needs to know about its run (small, picklable)."""

from __future__ import annotations

from dataclasses import dataclass

from evidence import AttemptConfig, Exporter
from tasks.storage import Location

EXPORTER_NAME = "evidence-stage"


@dataclass(frozen=True)
class RunContext:
    """Locations and output-changing parameters of one run."""

    run_dir: Location
    main: Location
    failures: Location | None
    capture_dir: Location
    session_id: str
    agent_version: str
    exporter_version: str
    ignored_checks: tuple[str, ...]
    resume: bool = False

    def source(self, name: str) -> Location:
        """The input file an attempt's ``source`` names."""
        location = self.main if name == "main" else self.failures
        if location is None:
            raise ValueError(f"no input file for source {name!r}")
        return location

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
    def verdict_source(self) -> str:
        """The rollouts file as health findings quote it (``locator.source_file``)."""
        return self.rollouts_out.display

    @property
    def rollouts_out(self) -> Location:
        return self.run_dir.child("rollouts.jsonl")

    @property
    def health_dir(self) -> Location:
        return self.run_dir.child("health")
