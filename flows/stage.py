"""The flow for one job: resolve the run, discover, fan out over attempt groups, reduce, publish.

This file holds the flow and nothing else (its steps live in ``flows.execution.resolve`` and
``flows.execution.job``, tasks in ``tasks/``): ``prefect deploy`` loads it as a top-level module named
``stage``, and Dask pickles the flow with every task run; a function defined here would pickle
by the name ``stage``, which a Dask worker cannot import.
"""

from __future__ import annotations

from contextlib import ExitStack
from datetime import UTC, datetime
from typing import Any

from prefect import get_run_logger
from prefect.client.schemas.objects import State
from prefect.states import Failed

from flows.execution.follow import follow_job
from flows.execution.job import Timings, process_job, publish_job
from flows.execution.modelflow import flow
from flows.execution.resolve import REFUSAL, NothingToRun, Refused, reason_of, resolve_run
from flows.execution.snapshots import GateBreached
from flows.params.stage import StageParams
from tasks.follow.tail import FollowedFileChanged
from tasks.inputs.naming import job_id_for
from tasks.publish.events import gate_failed, run_completed, run_failed
from tasks.publish.gate import GateFailed
from tasks.publish.task import emit
from tasks.rundir import is_complete


@flow(name="evidence-stage", log_prints=False, persist_result=False)
def stage_flow(params: StageParams) -> dict[str, Any] | State:
    """Process one evaluation job into a new (or resumed) run directory; announce how it ended (tasks.publish.events).

    A run refused before it starts (a missing input, a taken run id, a run in use, a subset
    that selects nothing) ends the flow run ``Failed`` with the reason as one log line, not a
    traceback; a direct call raises the reason. A failing quality gate ends the flow run
    ``Failed`` with the gate's one-line reason after everything is written (a direct call
    raises ``GateFailed``).
    """
    run_id = None  # until the run is claimed: a failure before names no run (another may own the id)
    logger = get_run_logger()
    try:
        with ExitStack() as stack:  # holds the run's lease, then the job's spills
            started_at = datetime.now(UTC)
            try:
                ctx, job_dir, recorded, run_id = resolve_run(params, stack)
            except Exception as exc:  # every reason not to start is a refusal
                raise Refused(exc) from exc
            if params.resume and is_complete(ctx.run_dir):
                logger.info("run %s is already complete; nothing to do", run_id)
                return {"run_id": run_id, "run_dir": ctx.run_dir.url, "already_complete": True}
            timings = Timings()
            ended = None
            if params.follow:
                job, ended, recorded = follow_job(params, ctx, recorded, started_at, timings, stack)
            else:
                job = process_job(params, ctx, recorded, timings, stack)
            manifest, outputs = publish_job(params, ctx, job_dir, recorded, run_id, started_at, job, timings)
    except (Refused, NothingToRun) as refusal:
        cause = refusal.cause if isinstance(refusal, Refused) else refusal
        emit(run_failed(params.job_id or job_id_for(params.rollouts), None if isinstance(refusal, NothingToRun) else run_id, cause))
        logger.error("%s", reason_of(cause), extra={REFUSAL: True})  # noqa: TRY400 - one line, no traceback: the point
        return Failed(message=reason_of(cause), data=cause)
    except (GateBreached, FollowedFileChanged) as stopped:  # a follow that cannot go on: the run is kept, unfinished
        if isinstance(stopped, FollowedFileChanged):
            emit(run_failed(params.job_id or job_id_for(params.rollouts), run_id, stopped))
        logger.error("%s", stopped, extra={REFUSAL: True})  # noqa: TRY400 - one line, as a refusal
        return Failed(message=str(stopped), data=stopped)
    except Exception as exc:
        emit(run_failed(params.job_id or job_id_for(params.rollouts), run_id, exc))
        raise
    counts = manifest.counts.to_json()
    logger.info("run %s complete: %s", run_id, counts)
    result = {
        "run_id": run_id,
        "run_dir": ctx.run_dir.url,
        "counts": counts,
        "scores": job.reduced.scores,
        "gate": manifest.gate,
        "already_complete": False,
    }
    if ended is not None:
        result["follow_ended"] = ended.value
    if manifest.gate is not None and not manifest.gate_passed:
        event = gate_failed(manifest.run, manifest.gate)
        emit(event)
        reason = event.payload["reason"]
        logger.error("%s; LATEST left as it was", reason)
        return Failed(message=reason, data=GateFailed(reason, result))
    emit(run_completed(manifest, ctx.run_dir, outputs))
    return result
