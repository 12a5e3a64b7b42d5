"""Following a running job (``run --follow``): tail it, fold new rows as they land, publish snapshots, end as a post-hoc run.

The loop looks at the job every ``POLL_SECONDS`` (``tasks.follow.JobTail``: new complete lines,
new shards, the captures' activity), runs the new rows' attempts through the fan-out (their parts
kept, as a resume keeps them) and hands each finished group to ONE incremental reduce kept open
for the whole follow (``FollowedReduce``: ``tasks.reduce.outputs.RunFolds`` fed by
``tasks.reduce.feed.Feed``, as a post-hoc run's fan-out feeds it), main rows in input order,
sidecar rows held for the end (they follow every main row in the outputs). Every
``snapshot_every`` seconds a snapshot is published from the folds' state on a thread of its own
(``Snapshots``): the documents as they stand, ``live.json`` (``evidence.LiveStatus``), a report
that says it is live and provisional, the gate once ``gate_min_rollouts`` rows are in, and a
Prefect event with the counts; ``_SUCCESS`` and ``LATEST`` wait for the end. When the job ends
(``evidence.end_of_job``) the same folds finish, over the plan the tail's reading makes
(``JobTail.plan``: no discovery parses the job again), so the end costs the last poll's rows and
the reduce's tail. Where the incremental order cannot hold (a capture changed after its row was
folded, a new shard sorting before rows folded, a file read short of its end), the folds are
discarded and the run is finished by today's full pass, discovery and reduce, and the log says
why; the outputs are a post-hoc run's either way.
"""

from __future__ import annotations

import functools
import time
from contextlib import ExitStack
from dataclasses import replace
from datetime import datetime

from prefect import get_run_logger

from evidence import EndReason, RecordedParams, end_of_job, unhealthy_share
from flows.execution.credentials import storage_options_with
from flows.execution.followed_reduce import FollowedReduce
from flows.execution.groups import GroupSizes, fan_out, make_groups
from flows.execution.job import ProcessedJob, Timings
from flows.execution.progress import Progress
from flows.execution.resolve import NothingToRun, recorded_rollouts
from flows.execution.runners import attempt_pool, parallel_groups
from flows.execution.snapshots import Snapshots, live_status, start_snapshot, write_live
from flows.params.stage import StageParams
from tasks.attempts.context import RunContext
from tasks.follow.tail import JobTail
from tasks.rundir import record_shards, remove_snapshot_outputs

POLL_SECONDS = 1.0
"""How often the job is looked at (at most; a snapshot interval below it looks as often as it snapshots)."""


def follow_job(
    params: StageParams, ctx: RunContext, recorded: RecordedParams, started_at: datetime, timings: Timings, stack: ExitStack
) -> tuple[ProcessedJob, EndReason, RecordedParams]:
    """Follow the job until it ends, then finish it as a post-hoc run would; the processed job, why it
    ended, and its parameters (a glob's shards as they are at the end, recorded in ``params.json``).

    Raises:
        GateBreached: a snapshot breached the gate with ``stop_on_breach`` set.
        tasks.follow.tail.FollowedFileChanged: an input file was truncated or replaced while followed.
    """
    logger = get_run_logger()
    ctx = replace(ctx, resume=True)  # the parts made while following are kept, and reused as a resume reuses them
    remove_snapshot_outputs(ctx.run_dir)  # a resumed follow's folds start over: no output of the earlier process stays
    options = storage_options_with(params)
    tail = JobTail(params.rollouts, params.failures, options, ctx.capture_dir)
    progress = Progress(total=0, job_id=ctx.job_id)
    poll = min(POLL_SECONDS, params.snapshot_every)
    started = last_line = last_change = time.time()
    next_snapshot = started + params.snapshot_every
    reduce = FollowedReduce(ctx, recorded)
    snapshots = Snapshots()
    with attempt_pool(params) as pool:
        try:
            while True:
                snapshots.check()
                now = time.time()
                end_file = tail.end_file()  # before the look: every row written before the end file is read by it
                look = tail.look(now)
                last_line = now if look.lines else last_line
                last_change = now if look.changed else last_change
                rows, failures, expected = tail.counts()
                progress.total = max(expected or 0, rows + failures)
                if look.attempts:
                    shards = tuple(shard.shard for shard in tail.shards)
                    sizes = GroupSizes(len(look.attempts), params.attempts_per_task, parallel_groups(params))
                    groups = make_groups(look.attempts, sizes)
                    fan_out(
                        params,
                        replace(ctx, shards=shards),
                        groups,
                        len(look.attempts),
                        pool,
                        functools.partial(reduce.done, shards),
                        progress,
                    )
                ended = end_of_job(
                    end_file=end_file,
                    expected=expected,
                    outstanding=len(tail.outstanding()),
                    quiet_s=now - last_change,
                    idle_s=now - last_line,
                    idle_timeout=params.idle_timeout,
                )
                if ended is not None:
                    break
                if now >= next_snapshot and not snapshots.busy():
                    start_snapshot(params, ctx, recorded, started_at, tail, reduce, snapshots, now)
                    next_snapshot = now + params.snapshot_every
                time.sleep(poll)
            snapshots.end()
            timings.seconds["follow_s"] = now - started  # from the first look to the end of the job
            if not any(tail.counts()[:2]):
                raise NothingToRun(nothing_followed(params, ended, now - started))
            logger.info("the followed job ended (%s) after %.0f s: finishing the run as a post-hoc run would", ended.value, now - started)
            final = replace(ctx, shards=tuple(shard.shard for shard in tail.shards))
            matched = recorded_rollouts(final.shards)
            if matched != recorded.rollouts:  # a glob that matched more shards as they appeared
                recorded = recorded.model_copy(update={"rollouts": matched})
                record_shards(ctx.run_dir, recorded)
            job = reduce.finish(params, final, recorded, tail, timings, stack, pool)
        finally:
            snapshots.end()
            reduce.close()
            snapshots.join()
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
