"""The flow for one job: resolve the run, discover, fan out over attempt groups, reduce, publish.

This file holds the flow and nothing else (helpers live in ``flows.execution.resolve`` and
``flows.execution.groups``, tasks in ``tasks/``): ``prefect deploy`` loads it as a top-level module named
``stage``, and Dask pickles the flow with every task run; a function defined here would pickle
by the name ``stage``, which a Dask worker cannot import.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from prefect import get_run_logger
from prefect.client.schemas.objects import State
from prefect.states import Failed

from flows.execution.groups import GroupSizes, fan_out, make_groups
from flows.execution.modelflow import flow
from flows.params import GateLimits, StageParams
from flows.execution.resolve import resolve_run, run_record, subset_filter
from flows.execution.runners import attempt_pool, parallel_groups
from tasks.publish.events import gate_failed, run_completed, run_failed
from tasks.publish.gate import GateFailed, judge_run
from tasks.inputs.naming import job_id_for
from tasks.discover.task import discover_job
from tasks.publish.task import emit, build_manifest, parts_removed_meanwhile, publish_artifacts, publish_run, write_document
from tasks.reduce.task import reduce_run
from tasks.publish.report import render_run_report
from tasks.rundir import ACCOUNTING_FILE, is_complete


@flow(name="evidence-stage", log_prints=False, persist_result=False)
def stage_flow(params: StageParams) -> dict[str, Any] | State:
    """Process one evaluation job into a new (or resumed) run directory; announce how it ended (tasks.publish.events).

    A failing quality gate ends the flow run ``Failed`` with the gate's one-line reason after
    everything is written (a direct call raises ``GateFailed``).
    """
    run_id = None  # until the run is claimed: a failure before names no run (another may own the id)
    try:
        logger = get_run_logger()
        started_at = datetime.now(timezone.utc)
        timings: dict[str, float] = {}
        clock = time.perf_counter()
        ctx, job_dir, recorded, run_id = resolve_run(params)
        if params.resume and is_complete(ctx.run_dir):
            logger.info("run %s is already complete; nothing to do", run_id)
            return {"run_id": run_id, "run_dir": ctx.run_dir.url, "already_complete": True}
        with ExitStack() as stack:
            with attempt_pool(params) as pool:  # its workers scan the rollouts file, then process groups
                plan = stack.enter_context(discover_job(ctx.shards, ctx.capture_dir, pool))
                timings["discover_s"] = time.perf_counter() - clock
                timings["discover_task_s"] = plan.seconds
                if recorded.is_subset:  # from the run itself: a resumed subset run stays a subset
                    plan.select(subset_filter(recorded.rollout_ids, recorded.rollout_glob))
                total = plan.attempts.count
                sizes = GroupSizes(total, params.attempts_per_task, parallel_groups(params))
                logger.info("%d attempts in groups of %s; %d orphan captures; %d skipped lines", total, sizes.describe(), len(plan.orphans), len(plan.skipped))
                clock = time.perf_counter()
                work = fan_out(params, ctx, make_groups(plan.attempts, sizes), total, pool)
            timings["fan_out_s"] = time.perf_counter() - clock
            timings["in_task_s"] = work.seconds
            timings["fan_out_parallelism"] = min(parallel_groups(params), work.runs)
            clock = time.perf_counter()
            reduced = reduce_run(ctx, plan.attempts, recorded.atif_all_or_nothing)
            stack.enter_context(reduced.log)
            timings["reduce_s"] = time.perf_counter() - clock
            timings["reduce_task_s"] = reduced.seconds
            write_document(ctx.run_dir, ACCOUNTING_FILE, plan.accounting)
            gate = judge_run(ctx.run_dir, GateLimits.model_validate(recorded.gate or {}).named(), plan.accounting)
            run = run_record(params, recorded, ctx, run_id, started_at)
            manifest = replace(build_manifest(run=run, params=recorded, plan=plan, reduced=reduced, timings=timings), gate=gate)
            clock = time.perf_counter()
            report_html, tables, outputs = render_run_report(ctx.run_dir, manifest.document(), reduced.histograms)
            manifest = manifest.with_timing("report_s", time.perf_counter() - clock)
            publish_run(ctx.run_dir, job_dir, manifest, report_html, not recorded.is_subset)
            with parts_removed_meanwhile(ctx.run_dir, params.keep_parts):
                publish_artifacts(manifest, ctx.run_dir, tables)
        counts = manifest.counts.to_json()
        logger.info("run %s complete: %s", run_id, counts)
        result = {"run_id": run_id, "run_dir": ctx.run_dir.url, "counts": counts, "already_complete": False}
        if gate is not None and not manifest.gate_passed:
            event = gate_failed(manifest.run, gate)
            emit(event)
            reason = event.payload["reason"]
            logger.error("%s; LATEST left as it was", reason)
            return Failed(message=reason, data=GateFailed(reason, {**result, "gate": gate}))
        emit(run_completed(manifest, ctx.run_dir, outputs))
        return result
    except Exception as exc:
        emit(run_failed(params.job_id or job_id_for(params.rollouts), run_id, exc))
        raise
