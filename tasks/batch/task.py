"""The bucket flow's pieces: the per-job task (decide, then run the job flow), the batch summary.

The task runs the job flow it is handed (``run_job``), so ``tasks/`` never imports ``flows/``;
the flow computes what the decision compares with (the config fingerprint a run would record).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from prefect import get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE

from tasks.batch.jobs import FoundJob, input_fingerprint
from tasks.compare.run_dirs import previous_complete_run
from tasks.compare.task import compare_with_previous
from tasks.publish.gate import GateFailed
from tasks.publish.task import publish_link
from tasks.rundir import newest_manifest
from tasks.storage import Location

PROCESSED, SKIPPED, FAILED = "processed", "skipped", "failed"


def freshness(job: FoundJob, output: Location, config_fingerprint: str) -> tuple[str | None, str | None]:
    """(why the job needs a run, or None when its newest complete run, gated or not, is current; that run's id)."""
    manifest = newest_manifest(output, job.job_id)
    if manifest is None:
        return "no complete run", None
    run_id = manifest.run.run_id
    if manifest.inputs.fingerprint != input_fingerprint(job, output.options):
        return "inputs changed", run_id
    if manifest.config_fingerprint != config_fingerprint:
        return "config changed", run_id
    return None, run_id


@task(name="stage-job", cache_policy=NO_CACHE, persist_result=False)
def stage_job(
    job: FoundJob, output: Location, config_fingerprint: str, force: bool, compare_previous: bool, run_job: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """Decide, then run the job flow as a subflow (and compare it with the previous run when asked);
    any failure is this job's entry, not the batch's."""
    entry: dict[str, Any] = {"job_id": job.job_id, "rollouts": job.rollouts, "capture_dir": job.capture_dir}
    try:
        reason, latest_run_id = ("forced", None) if force else freshness(job, output, config_fingerprint)
        if reason is None:
            return {**entry, "status": SKIPPED, "reason": "complete for the same inputs and config", "run_id": latest_run_id}
        previous = previous_complete_run(output, job.job_id)
        result = run_job()
        if compare_previous:
            entry["compare"] = compare_with_previous(previous, result["run_dir"], job.job_id)
    except GateFailed as failed:  # written and published, but not LATEST
        get_run_logger().error("job %s: %s", job.job_id, failed)
        return {**entry, "status": FAILED, "reason": str(failed), "run_id": failed.result["run_id"], "run_dir": failed.result["run_dir"]}
    except Exception as exc:  # noqa: BLE001 - one job's failure is recorded, the batch goes on
        get_run_logger().error("job %s failed: %s", job.job_id, exc)
        return {**entry, "status": FAILED, "reason": f"{type(exc).__name__}: {exc}"}
    return {**entry, "status": PROCESSED, "reason": reason, "run_id": result["run_id"], "run_dir": result["run_dir"]}


def summarise(
    *,
    prefix: str,
    output: str,
    force: bool,
    batch_run_id: str,
    started_at: str,
    entries: list[dict[str, Any]],
    skipped_folders: list[dict[str, Any]],
) -> dict[str, Any]:
    """The batch summary written to ``<output>/batches/<batch-run-id>.json``."""
    counts = {status: sum(1 for e in entries if e["status"] == status) for status in (PROCESSED, SKIPPED, FAILED)}
    return {
        "batch_run_id": batch_run_id,
        "prefix": prefix,
        "output": output,
        "force": force,
        "started_at": started_at,
        "finished_at": datetime.now(UTC).isoformat(),
        "counts": {"jobs": len(entries), **counts, "skipped_folders": len(skipped_folders)},
        "jobs": entries,
        "skipped_folders": skipped_folders,
    }


def publish_batch_artifacts(summary: dict[str, Any], target: Location) -> None:
    """A table of what happened to each job, and a link to the summary file."""
    create_table_artifact(
        key="evidence-stage-batch",
        table=[{k: e.get(k, "") for k in ("job_id", "status", "reason", "run_id")} for e in summary["jobs"]],
        description=f"Batch {summary['batch_run_id']}: {summary['counts']}",
    )
    publish_link("evidence-stage-batch-summary", target, "batch summary", f"The summary file of batch {summary['batch_run_id']}.")
