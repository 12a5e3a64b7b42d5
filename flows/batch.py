"""The flow over a bucket of jobs: find them, run the job flow for each as a subflow, summarise.

A job is skipped when its ``LATEST`` run recorded the same input and config fingerprints the
stage would record now, so a scheduled sweep only pays for what changed. Subflows run from a
bounded thread pool of tasks (one task per job), so one slow or failing job neither blocks
nor fails the others; the batch summary says what happened to each.
"""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from typing import Any

import orjson
from prefect import flow, get_run_logger, task, unmapped
from prefect.artifacts import create_link_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import ThreadPoolTaskRunner
from pydantic import BaseModel, ConfigDict, Field

from flows.params import StageParams, TaskRunnerKind, config_fingerprint
from flows.stage import output_params, stage_flow
from tasks.compare import compare_with_previous, previous_complete_run
from tasks.jobs import FoundJob, find_jobs, input_fingerprint, latest_manifest
from tasks.layout import DEFAULT_CAPTURE_DIR, DEFAULT_EXCLUDE_GLOBS, DEFAULT_ROLLOUTS_GLOB, JobLayout
from tasks.naming import new_run_id
from tasks.storage import Location

PROCESSED, SKIPPED, FAILED = "processed", "skipped", "failed"


def _as_in_stage(name: str) -> Any:
    """The job flow's own field (title, description, bounds), so both forms read the same."""
    return copy.copy(StageParams.model_fields[name])


class BatchParams(BaseModel):
    """A prefix of evaluation jobs, where their runs go, and the options every job run gets."""

    model_config = ConfigDict(extra="forbid")

    prefix: str = Field(title="Jobs prefix", description="URL under which job folders are found (s3://bucket/prefix, local path, memory://).")
    output: str = Field(title="Output root", description="URL under which `<job-id>/runs/<run-id>/` and `batches/` are written.")
    force: bool = Field(default=False, title="Force", description="Process every job, even when its LATEST run has the same fingerprints.")
    max_concurrency: int = Field(default=2, ge=1, le=64, title="Concurrent jobs", description="Jobs processed at the same time.")
    rollouts_glob: str = Field(default=DEFAULT_ROLLOUTS_GLOB, title="Rollouts file glob", description="Which files in a job folder can be its rollouts file.")
    exclude_globs: list[str] = Field(
        default=list(DEFAULT_EXCLUDE_GLOBS), title="Excluded file globs", description="Files that are never rollouts files (sidecars, Gym's own outputs)."
    )
    capture_dir_name: str = Field(default=DEFAULT_CAPTURE_DIR, title="Capture directory name", description="The folder that marks a job folder.")
    compare_previous: bool = Field(
        default=False, title="Compare with the previous run", description="Compare each processed job with its previous complete run (artifact + compare files)."
    )
    ignored_checks: list[str] = _as_in_stage("ignored_checks")
    atif_all_or_nothing: bool = _as_in_stage("atif_all_or_nothing")
    attempts_per_task: int | None = _as_in_stage("attempts_per_task")
    task_runner: TaskRunnerKind = _as_in_stage("task_runner")
    max_workers: int = _as_in_stage("max_workers")
    dask_address: str | None = _as_in_stage("dask_address")
    dask_workers: int = _as_in_stage("dask_workers")
    storage_options: dict[str, Any] = _as_in_stage("storage_options")

    @property
    def layout(self) -> JobLayout:
        return JobLayout(self.rollouts_glob, tuple(self.exclude_globs), self.capture_dir_name)

    def job_params(self, job: FoundJob) -> StageParams:
        """The job flow's parameters for one found job (ids and ATIF defaults as ``run`` gives them)."""
        shared = self.model_dump(include=set(StageParams.model_fields) - {"output"})
        return StageParams(rollouts=job.rollouts, capture_dir=job.capture_dir, output=self.output, **shared)


def freshness(job: FoundJob, params: StageParams) -> tuple[str | None, str | None]:
    """(why the job needs a run, or None when its LATEST run is current; that run's id)."""
    manifest = latest_manifest(Location(params.output, params.storage_options), job.job_id)
    if manifest is None:
        return "no complete run", None
    run_id = manifest["run"]["run_id"]
    if manifest["inputs"]["fingerprint"] != input_fingerprint(job, params.storage_options):
        return "inputs changed", run_id
    if manifest["config_fingerprint"] != config_fingerprint(output_params(params, job.job_id)):
        return "config changed", run_id
    return None, run_id


@task(name="stage-job", cache_policy=NO_CACHE, persist_result=False)
def stage_job(job: FoundJob, params: BatchParams) -> dict[str, Any]:
    """Decide, then run the job flow as a subflow; any failure is this job's entry, not the batch's."""
    entry: dict[str, Any] = {"job_id": job.job_id, "rollouts": job.rollouts, "capture_dir": job.capture_dir}
    job_params = params.job_params(job)
    try:
        reason, latest_run_id = ("forced", None) if params.force else freshness(job, job_params)
        if reason is None:
            return {**entry, "status": SKIPPED, "reason": "complete for the same inputs and config", "run_id": latest_run_id}
        previous = previous_complete_run(Location(params.output, params.storage_options), job.job_id)
        result = stage_flow(job_params)
        if params.compare_previous:
            entry["compare"] = compare_with_previous(previous, result["run_dir"], job.job_id)
    except Exception as exc:  # noqa: BLE001 - one job's failure is recorded, the batch goes on
        get_run_logger().error("job %s failed: %s", job.job_id, exc)
        return {**entry, "status": FAILED, "reason": f"{type(exc).__name__}: {exc}"}
    return {**entry, "status": PROCESSED, "reason": reason, "run_id": result["run_id"], "run_dir": result["run_dir"]}


def summarise(params: BatchParams, batch_run_id: str, started_at: str, entries: list[dict[str, Any]], skipped_folders: list[dict[str, Any]]) -> dict[str, Any]:
    """The batch summary written to ``<output>/batches/<batch-run-id>.json``."""
    counts = {status: sum(1 for e in entries if e["status"] == status) for status in (PROCESSED, SKIPPED, FAILED)}
    return {
        "batch_run_id": batch_run_id,
        "prefix": params.prefix,
        "output": params.output,
        "force": params.force,
        "started_at": started_at,
        "finished_at": datetime.now(timezone.utc).isoformat(),
        "counts": {"jobs": len(entries), **counts, "skipped_folders": len(skipped_folders)},
        "jobs": entries,
        "skipped_folders": skipped_folders,
    }


@flow(name="evidence-stage", log_prints=False, persist_result=False)  # one flow name: deployments read evidence-stage/<name>
def batch_flow(params: BatchParams) -> dict[str, Any]:
    """Process every job under a prefix that has no current run; write the batch summary."""
    logger = get_run_logger()
    started_at = datetime.now(timezone.utc).isoformat()
    batch_run_id = new_run_id()
    search = find_jobs(Location(params.prefix, params.storage_options), params.layout)
    skipped_folders = [{"folder": s.folder, "reason": s.reason, "candidates": list(s.candidates)} for s in search.skipped]
    for folder in skipped_folders:
        logger.warning("skipped folder %r: %s", folder["folder"], folder["reason"])
    logger.info("%d jobs under %s", len(search.jobs), params.prefix)
    with ThreadPoolTaskRunner(max_workers=params.max_concurrency) as runner:
        futures = runner.map(stage_job, {"job": search.jobs, "params": unmapped(params)})
        entries = [future.result() for future in futures]
    summary = summarise(params, batch_run_id, started_at, entries, skipped_folders)
    target = Location(params.output, params.storage_options).child("batches", f"{batch_run_id}.json")
    target.write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n")
    publish_batch_artifacts(summary, target)
    logger.info("batch %s: %s", batch_run_id, summary["counts"])
    return {**summary, "summary_url": target.url}


def publish_batch_artifacts(summary: dict[str, Any], target: Location) -> None:
    """A table of what happened to each job, and a link to the summary file."""
    create_table_artifact(
        key="evidence-stage-batch",
        table=[{k: e.get(k, "") for k in ("job_id", "status", "reason", "run_id")} for e in summary["jobs"]],
        description=f"Batch {summary['batch_run_id']}: {summary['counts']}",
    )
    create_link_artifact(key="evidence-stage-batch-summary", link=target.url, link_text="batch summary")
