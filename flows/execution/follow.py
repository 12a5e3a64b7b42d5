"""Following a running job (``run --follow``): tail it, process new rows as they land, publish snapshots, end as a post-hoc run.

The loop looks at the job every ``POLL_SECONDS`` (``tasks.follow.JobTail``: new complete lines,
new shards, the captures' activity), runs the new rows' attempts through the fan-out (their parts
kept, as a resume keeps them), and every ``snapshot_every`` seconds publishes a snapshot: the
run's outputs as they stand, ``live.json`` (``evidence.LiveStatus``), a report that says it is
live and provisional, the gate once ``gate_min_rollouts`` rows are in, and a Prefect event with
the counts. ``_SUCCESS`` and ``LATEST`` wait for the end. When the job ends
(``evidence.end_of_job``), the run is finished exactly as ``evidence-stage run`` on the finished
job would write it: discovery of the whole job, whose attempts are those processed while
following (a capture that changed after its row is processed again), the reduce and publishing.

``snapshot_outputs`` is the one seam between the follow and the reduce: today it discovers the
job up to what was read and runs the batch reduce over the kept parts; an incremental reduce
that folds parts as the fan-out makes them can answer it from its state instead.
"""

from __future__ import annotations

import time
from concurrent.futures import Executor
from contextlib import ExitStack
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from prefect import get_run_logger

from evidence import (
    EndReason,
    LiveStatus,
    RecordedParams,
    StageError,
    answered_accounting,
    capture_activity,
    end_of_job,
    evaluate_gate,
    gate_reason,
    outstanding_rollouts,
    unhealthy_share,
)
from flows.execution.credentials import storage_options_with
from flows.execution.groups import GroupSizes, fan_out, make_groups
from flows.execution.job import ProcessedJob, Timings, process_job
from flows.execution.progress import Progress
from flows.execution.resolve import NothingToRun, recorded_rollouts, run_record
from flows.execution.runners import attempt_pool, parallel_groups
from flows.params.gate import GateLimits
from flows.params.stage import StageParams
from tasks.attempts.context import RunContext
from tasks.follow.tail import JobTail
from tasks.publish.events import job_gate_breached, job_snapshot
from tasks.publish.report import render_run_report
from tasks.publish.task import build_manifest, emit, publish_artifacts, write_document
from tasks.rundir import ACCOUNTING_FILE, GATE_FILE, LIVE_FILE, RunPaths, read_document, record_shards, remove_snapshot_outputs

POLL_SECONDS = 1.0
"""How often the job is looked at (at most; a snapshot interval below it looks as often as it snapshots)."""


class GateBreached(StageError):
    """A followed job's snapshot breached the gate and ``stop_on_breach`` ended the follow; the run is kept and resumable."""

    def __init__(self, reason: str, result: dict[str, Any]) -> None:
        super().__init__(reason)
        self.result = result


def follow_job(
    params: StageParams, ctx: RunContext, recorded: RecordedParams, started_at: datetime, timings: Timings, stack: ExitStack
) -> tuple[ProcessedJob, EndReason, RecordedParams]:
    """Follow the job until it ends, then process it as a post-hoc run would; the processed job, why it
    ended, and its parameters (a glob's shards as they are at the end, recorded in ``params.json``).

    Raises:
        GateBreached: a snapshot breached the gate with ``stop_on_breach`` set.
        tasks.follow.tail.FollowedFileChanged: an input file was truncated or replaced while followed.
    """
    logger = get_run_logger()
    ctx = replace(ctx, resume=True)  # the parts made while following are kept, and reused as a resume reuses them
    options = storage_options_with(params)
    tail = JobTail(params.rollouts, params.failures, options, ctx.capture_dir)
    progress = Progress(total=0, job_id=ctx.job_id)
    poll = min(POLL_SECONDS, params.snapshot_every)
    started = last_line = last_change = time.time()
    next_snapshot = started + params.snapshot_every
    with attempt_pool(params) as pool:
        while True:
            now = time.time()
            look = tail.look(now)
            last_line = now if look.lines else last_line
            last_change = now if look.changed else last_change
            rows, failures, expected = tail.counts()
            progress.total = max(expected or 0, rows + failures)
            if look.attempts:
                current = replace(ctx, shards=tuple(shard.shard for shard in tail.shards))
                sizes = GroupSizes(len(look.attempts), params.attempts_per_task, parallel_groups(params))
                # parts only: a snapshot folds them through process_job, the end of the job as a post-hoc run
                fan_out(params, current, make_groups(look.attempts, sizes), len(look.attempts), pool, lambda _group: None, progress)
            ended = end_of_job(
                end_file=tail.end_file(),
                expected=expected,
                outstanding=len(tail.outstanding()),
                quiet_s=now - last_change,
                idle_s=now - last_line,
                idle_timeout=params.idle_timeout,
            )
            if ended is not None:
                break
            if now >= next_snapshot:
                publish_snapshot(params, ctx, recorded, started_at, tail, now, pool)
                next_snapshot = time.time() + params.snapshot_every
            time.sleep(poll)
        timings.seconds["follow_s"] = now - started  # from the first look to the end of the job
        if not any(tail.counts()[:2]):
            raise NothingToRun(nothing_followed(params, ended, now - started))
        logger.info("the followed job ended (%s) after %.0f s: finishing the run as a post-hoc run would", ended.value, now - started)
        remove_snapshot_outputs(ctx.run_dir)
        final = replace(ctx, shards=tuple(shard.shard for shard in tail.shards))
        shards = recorded_rollouts(final.shards)
        if shards != recorded.rollouts:  # a glob that matched more shards as they appeared
            recorded = recorded.model_copy(update={"rollouts": shards})
            record_shards(ctx.run_dir, recorded)
        job = process_job(params, final, recorded, timings, stack, running=pool, followed=True)
    final_status = replace(
        live_status(params, tail, time.time(), done=True, ended=ended), unhealthy_share=unhealthy_share(job.reduced.verdicts)
    )
    write_live(ctx, final_status)  # then publishing: _SUCCESS, LATEST
    return job, ended, recorded


def nothing_followed(params: StageParams, ended: EndReason, seconds: float) -> str:
    """Why a followed job that ended without a row (main or sidecar) is not a run: a post-hoc run
    refuses such a job before claiming a run directory, so a new run's is removed again."""
    kept = "the run is kept" if params.resume else "the run was not kept"
    return f"no rollouts ever appeared in {params.rollouts} in {seconds:.0f} s of following (ended: {ended.value}): nothing to run ({kept})"


def live_status(params: StageParams, tail: JobTail, now: float, *, done: bool = False, ended: EndReason | None = None) -> LiveStatus:
    """The job's counts and outstanding rollouts as the tail last saw them."""
    rows, failures, expected = tail.counts()
    in_flight, stalled, waiting = outstanding_rollouts(tail.outstanding(), capture_activity(tail.activity.items()), now, params.stall_after)
    return LiveStatus(
        snapshot_at=datetime.fromtimestamp(now, UTC).isoformat(),
        rows=rows,
        failures=failures,
        expected=expected,
        in_flight=in_flight,
        stalled=stalled,
        waiting=waiting,
        done=done,
        ended=ended,
    )


def write_live(ctx: RunContext, status: LiveStatus) -> None:
    write_document(ctx.run_dir, LIVE_FILE, status.document())


def snapshot_outputs(
    params: StageParams, ctx: RunContext, recorded: RecordedParams, tail: JobTail, pool: Executor | None, stack: ExitStack
) -> ProcessedJob | None:
    """THE SEAM: the run's outputs as they stand, written into the run directory, and what made them
    (None before the job has a rollouts file).

    Today: discovery of the job up to the lines the tail has read, the fan-out of any attempt
    whose part is missing or stale (a capture that changed after its row), and the batch reduce
    over the kept parts.
    """
    shards = tail.snapshot_shards()
    if not shards:
        return None
    return process_job(params, replace(ctx, shards=shards), recorded, Timings(), stack, running=pool, ends=tail.ends(), followed=True)


def publish_snapshot(
    params: StageParams, ctx: RunContext, recorded: RecordedParams, started_at: datetime, tail: JobTail, now: float, pool: Executor | None
) -> LiveStatus:
    """One snapshot: the outputs as they stand, the live gate, ``live.json``, the report, the artifacts, the event.

    Raises:
        GateBreached: the gate is breached and ``stop_on_breach`` is set (after the snapshot is written).
    """
    status = live_status(params, tail, now)
    gate = None
    with ExitStack() as stack:
        job = snapshot_outputs(params, ctx, recorded, tail, pool, stack)
        if job is not None:
            status = replace(status, unhealthy_share=unhealthy_share(job.reduced.verdicts))
            write_document(ctx.run_dir, ACCOUNTING_FILE, job.plan.accounting)
            gate = live_gate(params, recorded, ctx, job, status.rows)
            if gate is not None:
                write_document(ctx.run_dir, GATE_FILE, gate)
                status = replace(status, gate_breached=not gate["passed"])
            run = run_record(params, recorded, ctx, ctx.run_id, started_at)
            manifest = replace(build_manifest(run=run, params=recorded, plan=job.plan, reduced=job.reduced, timings={}), gate=gate)
            report_html, tables, _ = render_run_report(ctx.run_dir, manifest.finished(), job.reduced.histograms, status.document())
            paths = RunPaths(ctx.run_dir)
            paths.manifest.write_chunks(manifest.json_chunks)
            paths.report.write_bytes(report_html.encode())
            publish_artifacts(manifest, ctx.run_dir, tables)  # the same keys as the finished run's: each snapshot updates them
    write_live(ctx, status)
    emit(job_snapshot(ctx.job_id, ctx.run_id, ctx.run_dir, status.counts()))
    if gate is not None and not gate["passed"]:
        emit(job_gate_breached(ctx.job_id, ctx.run_id, ctx.run_dir, gate, status.counts()))
        get_run_logger().warning("snapshot of %d rows: %s", status.rows, gate_reason(gate))
        if params.stop_on_breach:
            raise GateBreached(
                f"{gate_reason(gate)} on the {status.rows} rows in so far: the follow stopped (--stop-on-breach);"
                f" the run is kept and resumable",
                {"run_id": ctx.run_id, "run_dir": ctx.run_dir.url, "live": status.document(), "gate": gate},
            )
    return status


def live_gate(params: StageParams, recorded: RecordedParams, ctx: RunContext, job: ProcessedJob, rows: int) -> dict[str, Any] | None:
    """The gate on a snapshot once ``gate_min_rollouts`` rows are in (None before, or ungated): the debt shares
    measured over the rollouts answered so far (``evidence.answered_accounting``)."""
    limits = GateLimits.model_validate(recorded.gate or {}).named()
    if not limits or rows < (params.gate_min_rollouts or 1):
        return None
    paths = RunPaths(ctx.run_dir)
    summary = read_document(paths.quality_summary)
    if summary is None:
        return None
    return evaluate_gate(limits, answered_accounting(job.plan.accounting), summary, read_document(paths.scores))
