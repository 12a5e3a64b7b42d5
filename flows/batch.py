"""The flow over a bucket of jobs: find them, run the job flow for each as a subflow, summarise.

A job is skipped when its newest complete run (``LATEST``, or ``LATEST_FAILED_GATE`` when its
quality gate failed) recorded the same input and config fingerprints the stage would record now, so a scheduled sweep only pays for what changed. Subflows run from a
bounded thread pool of tasks (one task per job), so one slow or failing job neither blocks
nor fails the others; the batch summary says what happened to each. Like ``flows/stage.py``,
this file holds the flow and its parameters only (tasks and helpers in ``tasks/batch/task.py``).
"""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from functools import partial
from typing import Any

import orjson
from prefect import get_run_logger, unmapped
from prefect.task_runners import ThreadPoolTaskRunner
from pydantic import BaseModel, ConfigDict, Field

from flows.execution.modelflow import flow
from flows.params import GateLimits, IgnoredChecks, OptionalCount, OptionalText, StageParams, StorageOptions, TaskRunnerKind, Url
from flows.execution.resolve import output_params
from flows.stage import stage_flow
from tasks.batch.task import publish_batch_artifacts, stage_job, summarise
from flows.execution.credentials import storage_options_with
from tasks.batch.jobs import FoundJob, find_jobs
from tasks.inputs.layout import DEFAULT_CAPTURE_DIR, DEFAULT_EXCLUDE_GLOBS, DEFAULT_ROLLOUTS_GLOB, DEFAULT_SHARD_GLOB, JobLayout
from tasks.inputs.naming import new_run_id
from tasks.storage import Location


def _as_in_stage(name: str) -> Any:
    """The job flow's own field (title, description, bounds), so both forms read the same."""
    return copy.copy(StageParams.model_fields[name])


class BatchParams(BaseModel):
    """A prefix of evaluation jobs, where their runs go, and the options every job run gets."""

    model_config = ConfigDict(extra="forbid")

    prefix: Url = Field(title="Jobs prefix", description="URL under which job folders are found (s3://bucket/prefix, local path, memory://).")
    output: Url = Field(title="Output root", description="URL under which `<job-id>/runs/<run-id>/` and `batches/` are written.")
    force: bool = Field(default=False, title="Force", description="Process every job, even when its LATEST run has the same fingerprints.")
    max_concurrency: int = Field(default=2, ge=1, le=64, title="Concurrent jobs", description="Jobs processed at the same time.")
    rollouts_glob: str = Field(default=DEFAULT_ROLLOUTS_GLOB, title="Rollouts file glob", description="Which files in a job folder can be its rollouts file.")
    exclude_globs: list[str] = Field(
        default=list(DEFAULT_EXCLUDE_GLOBS), title="Excluded file globs", description="Files that are never rollouts files (sidecars, Gym's own outputs)."
    )
    capture_dir_name: str = Field(default=DEFAULT_CAPTURE_DIR, title="Capture directory name", description="The folder that marks a job folder.")
    shard_glob: str = Field(
        default=DEFAULT_SHARD_GLOB, title="Shard file glob",
        description="A folder whose rollouts files all match this glob is one sharded job (else several files are ambiguous).",
    )
    compare_previous: bool = Field(
        default=False, title="Compare with the previous run", description="Compare each processed job with its previous complete run (artifact + compare files)."
    )
    ignored_checks: IgnoredChecks = _as_in_stage("ignored_checks")
    atif_all_or_nothing: bool = _as_in_stage("atif_all_or_nothing")
    keep_parts: bool = _as_in_stage("keep_parts")
    attempts_per_task: OptionalCount = _as_in_stage("attempts_per_task")
    task_runner: TaskRunnerKind = _as_in_stage("task_runner")
    max_workers: int = _as_in_stage("max_workers")
    dask_address: OptionalText = _as_in_stage("dask_address")
    dask_workers: int = _as_in_stage("dask_workers")
    storage_options: StorageOptions = _as_in_stage("storage_options")
    aws_credentials_block: OptionalText = _as_in_stage("aws_credentials_block")
    gate: GateLimits = _as_in_stage("gate")

    @property
    def layout(self) -> JobLayout:
        return JobLayout(self.rollouts_glob, tuple(self.exclude_globs), self.capture_dir_name, self.shard_glob)

    def job_params(self, job: FoundJob) -> StageParams:
        """The job flow's parameters for one found job (ids and ATIF defaults as ``run`` gives them)."""
        shared = self.model_dump(include=set(StageParams.model_fields) - {"output"})
        return StageParams(rollouts=job.rollouts, capture_dir=job.capture_dir, output=self.output, **shared)


@flow(name="evidence-stage", log_prints=False, persist_result=False)  # one flow name: deployments read evidence-stage/<name>
def batch_flow(params: BatchParams) -> dict[str, Any]:
    """Process every job under a prefix that has no current run; write the batch summary."""
    logger = get_run_logger()
    started_at = datetime.now(timezone.utc).isoformat()
    batch_run_id = new_run_id()
    options = storage_options_with(params.storage_options, params.aws_credentials_block)
    search = find_jobs(Location(params.prefix, options), params.layout)
    skipped_folders = [{"folder": s.folder, "reason": s.reason, "candidates": list(s.candidates)} for s in search.skipped]
    for folder in skipped_folders:
        logger.warning("skipped folder %r: %s", folder["folder"], folder["reason"])
    logger.info("%d jobs under %s", len(search.jobs), params.prefix)
    output = Location(params.output, options)
    job_params = [params.job_params(job) for job in search.jobs]
    with ThreadPoolTaskRunner(max_workers=params.max_concurrency) as runner:
        futures = runner.map(
            stage_job,
            {
                "job": search.jobs,
                "output": unmapped(output),
                "config_fingerprint": [output_params(p, job.job_id, job.rollouts).config_fingerprint() for p, job in zip(job_params, search.jobs)],
                "force": unmapped(params.force),
                "compare_previous": unmapped(params.compare_previous),
                "run_job": [partial(stage_flow, p) for p in job_params],
            },
        )
        entries = [future.result() for future in futures]
    summary = summarise(
        prefix=params.prefix, output=params.output, force=params.force,
        batch_run_id=batch_run_id, started_at=started_at, entries=entries, skipped_folders=skipped_folders,
    )
    target = output.child("batches", f"{batch_run_id}.json")
    target.write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n")
    publish_batch_artifacts(summary, target)
    logger.info("batch %s: %s", batch_run_id, summary["counts"])
    return {**summary, "summary_url": target.url}
