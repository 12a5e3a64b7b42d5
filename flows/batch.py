"""The flow over a bucket of jobs: find them, run the job flow for each as a subflow, summarise.

A job is skipped when its newest complete run (``LATEST``, or ``LATEST_FAILED_GATE`` when its
quality gate failed) recorded the same input and config fingerprints the stage would record
now, so a scheduled sweep only pays for what changed. Subflows run from a
bounded thread pool of tasks (one task per job), so one slow or failing job neither blocks
nor fails the others; the batch summary says what happened to each. Like ``flows/stage.py``,
this file holds the flow only (its parameters in ``flows/params/batch.py``, tasks and helpers in ``tasks/batch/``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from typing import Any, cast

import orjson
from prefect import get_run_logger, unmapped
from prefect.task_runners import ThreadPoolTaskRunner

from flows.execution.credentials import storage_options_with
from flows.execution.modelflow import flow
from flows.execution.resolve import output_params
from flows.params.batch import BatchParams
from flows.stage import stage_flow
from tasks.batch.jobs import find_jobs
from tasks.batch.task import publish_batch_artifacts, stage_job, summarise
from tasks.inputs.naming import new_run_id
from tasks.storage import Location


@flow(name="evidence-stage", log_prints=False, persist_result=False)  # one flow name: deployments read evidence-stage/<name>
def batch_flow(params: BatchParams) -> dict[str, Any]:
    """Process every job under a prefix that has no current run; write the batch summary."""
    logger = get_run_logger()
    started_at = datetime.now(UTC).isoformat()
    batch_run_id = new_run_id()
    options = storage_options_with(params)
    search = find_jobs(Location(params.prefix, options), params.layout)
    skipped_folders = [{"folder": s.folder, "reason": s.reason, "candidates": list(s.candidates)} for s in search.skipped]
    for folder in skipped_folders:
        logger.warning("skipped folder %r: %s", folder["folder"], folder["reason"])
    logger.info("%d jobs under %s", len(search.jobs), params.prefix)
    output = Location(params.output, options)
    job_params = [params.job_params(job) for job in search.jobs]
    with ThreadPoolTaskRunner[dict[str, Any]](max_workers=params.max_concurrency) as runner:
        futures = runner.map(
            stage_job,
            {
                "job": search.jobs,
                "output": unmapped(output),
                "config_fingerprint": [
                    output_params(p, job.job_id, job.rollouts).config_fingerprint() for p, job in zip(job_params, search.jobs, strict=False)
                ],
                "force": unmapped(params.force),
                "compare_previous": unmapped(params.compare_previous),
                "run_job": [partial(stage_flow, p) for p in job_params],
            },
        )
        # Prefect types map's futures as PrefectFutureList[future], so a result as a future.
        entries = cast(list[dict[str, Any]], [future.result() for future in futures])
    summary = summarise(
        prefix=params.prefix,
        output=params.output,
        force=params.force,
        batch_run_id=batch_run_id,
        started_at=started_at,
        entries=entries,
        skipped_folders=skipped_folders,
    )
    target = output.child("batches", f"{batch_run_id}.json")
    target.write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n")
    publish_batch_artifacts(summary, target)
    logger.info("batch %s: %s", batch_run_id, summary["counts"])
    return {**summary, "summary_url": target.url}
