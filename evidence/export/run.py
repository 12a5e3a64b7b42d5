"""What a tracking store records about one finished run: identity, params, times, attempt keys.

Everything comes from the run's ``manifest.json`` (its typed ``FinishedRun`` and attempt entries); nothing here reads files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from evidence.export.ids import TraceIdentity
from evidence.models.run import AttemptEntry, FinishedRun

__all__ = ["RUN_KEY_TAG", "RunRecord", "main_identities"]

# The tag that finds a run's MLflow run again, so a second export updates it.
RUN_KEY_TAG = "evidence_stage.run_key"


def _epoch_ms(text: str) -> int:
    return round(datetime.fromisoformat(text).timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A stage run as an experiment tracker sees it."""

    job_id: str
    run_id: str
    started_ms: int
    finished_ms: int
    params: Mapping[str, str]

    @classmethod
    def from_finished(cls, finished: FinishedRun) -> RunRecord:
        run = finished.run
        return cls(
            job_id=run.job_id,
            run_id=run.run_id,
            started_ms=_epoch_ms(run.started_at),
            finished_ms=_epoch_ms(run.finished_at),
            params={
                "job_id": run.job_id,
                "run_id": run.run_id,
                "scope": run.scope,
                "config_fingerprint": finished.config_fingerprint,
                "input_fingerprint": finished.inputs.fingerprint,
                "package_version": run.package_version,
            },
        )

    @property
    def key(self) -> str:
        """``<job id>/<run id>``: unique per run directory."""
        return f"{self.job_id}/{self.run_id}"

    @property
    def tags(self) -> dict[str, str]:
        return {RUN_KEY_TAG: self.key, "evidence_stage.job_id": self.job_id, "evidence_stage.run_id": self.run_id}


def main_identities(record: RunRecord, attempts: Iterable[AttemptEntry]) -> list[TraceIdentity]:
    """The trace identity of each line of the run's ``rollouts.jsonl``, in file order.

    Every main attempt writes exactly one row, in input order, so the n-th main attempt of the
    manifest is the n-th row.
    """
    return [TraceIdentity(record.job_id, record.run_id, attempt.key) for attempt in attempts if attempt.source == "main"]
