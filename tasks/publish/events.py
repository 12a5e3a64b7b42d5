"""The event every finished run emits, so automations and downstream deployments can follow it.

``evidence-stage.run.completed`` carries the run's counts and output URLs, and
``evidence-stage.run.failed`` the error; both name the run as their resource,
``evidence-stage.run.<job-id>.<run-id>``, with the job and run ids as labels to match on. A run
that was written but failed its quality gate emits ``evidence-stage.gate.failed`` instead of
``run.completed``, so followers that export metrics (the export deployments) skip it.
This module builds the events; ``tasks.publish.task.emit`` sends them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evidence import RunIdentity, RunManifest, gate_reason
from tasks.rundir import RunPaths
from tasks.storage import Location

RUN_COMPLETED = "evidence-stage.run.completed"
RUN_FAILED = "evidence-stage.run.failed"
GATE_FAILED = "evidence-stage.gate.failed"
JOB_SNAPSHOT = "evidence-stage.job.snapshot"
JOB_GATE_BREACHED = "evidence-stage.job.gate-breached"
ERROR_CHARS = 2_000
UNCLAIMED = "unclaimed"  # a run that failed before it had a run id


def run_resource(job_id: str, run_id: str | None) -> dict[str, str]:
    run_id = run_id or UNCLAIMED
    return {
        "prefect.resource.id": f"evidence-stage.run.{job_id}.{run_id}",
        "prefect.resource.name": f"{job_id}/{run_id}",
        "evidence-stage.job-id": job_id,
        "evidence-stage.run-id": run_id,
    }


@dataclass(frozen=True, slots=True)
class StageEvent:
    """One event as Prefect's ``emit_event`` takes it."""

    name: str
    resource: dict[str, str]
    payload: dict[str, Any]


def run_completed(manifest: RunManifest, run_dir: Location, outputs: list[str]) -> StageEvent:
    """``evidence-stage.run.completed``: scope, counts, and the URL of every output the run wrote
    (``outputs``, the names the report found: asking again cost a request each)."""
    run = manifest.run
    urls = {name: run_dir.child(name).url for name in outputs}
    payload = {
        "scope": run.scope,
        "run_dir": run_dir.url,
        "report": RunPaths(run_dir).report.url,
        "outputs": urls,
        "counts": manifest.counts.to_json(),
    }
    return StageEvent(RUN_COMPLETED, run_resource(run.job_id, run.run_id), payload)


def run_failed(job_id: str, run_id: str | None, error: BaseException) -> StageEvent:
    """``evidence-stage.run.failed``: what stopped the run (bounded), so a follower can report it."""
    message = f"{type(error).__name__}: {error}"[:ERROR_CHARS]
    return StageEvent(RUN_FAILED, run_resource(job_id, run_id), {"error": message})


def gate_failed(run: RunIdentity, gate: dict[str, Any]) -> StageEvent:
    """``evidence-stage.gate.failed``: the job, the run, the one-line reason and the failing limits
    with what was measured."""
    payload = {
        "job_id": run.job_id,
        "run_id": run.run_id,
        "run_dir": run.run_dir,
        "reason": gate_reason(gate),
        "failing": [limit for limit in gate["limits"] if not limit["passed"]],
    }
    return StageEvent(GATE_FAILED, run_resource(run.job_id, run.run_id), payload)


def job_snapshot(job_id: str, run_id: str, run_dir: Location, counts: dict[str, Any]) -> StageEvent:
    """``evidence-stage.job.snapshot``: a followed job's counts at one snapshot (``live.json``'s figures)."""
    return StageEvent(JOB_SNAPSHOT, run_resource(job_id, run_id), {"run_dir": run_dir.url, **counts})


def job_gate_breached(job_id: str, run_id: str, run_dir: Location, gate: dict[str, Any], counts: dict[str, Any]) -> StageEvent:
    """``evidence-stage.job.gate-breached``: a followed job's snapshot failed the gate, with the figures
    (an automation can cancel the evaluation on it)."""
    payload = {
        "job_id": job_id,
        "run_id": run_id,
        "run_dir": run_dir.url,
        "reason": gate_reason(gate),
        "failing": [limit for limit in gate["limits"] if not limit["passed"]],
        "counts": counts,
    }
    return StageEvent(JOB_GATE_BREACHED, run_resource(job_id, run_id), payload)
