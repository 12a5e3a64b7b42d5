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

import contextvars
import functools
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import orjson
from prefect import get_run_logger

from evidence import (
    EndReason,
    LiveStatus,
    RecordedParams,
    RunIdentity,
    RunManifest,
    StageError,
    Streamed,
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
from flows.execution.job import ProcessedJob, Timings, open_reduce, process_job
from flows.execution.progress import Progress
from flows.execution.resolve import NothingToRun, recorded_rollouts, run_record
from flows.execution.runners import attempt_pool, parallel_groups
from flows.params.gate import GateLimits
from flows.params.stage import StageParams
from tasks.attempts.context import RunContext
from tasks.discover.refs import MAIN, AttemptRef
from tasks.discover.scan import JobPlan
from tasks.follow.tail import JobTail
from tasks.inputs.shards import Shard
from tasks.publish.events import job_gate_breached, job_snapshot
from tasks.publish.report import render_run_report
from tasks.publish.task import build_manifest, emit, publish_artifacts, write_document
from tasks.reduce.attempt_log import AttemptLog
from tasks.reduce.feed import Feed
from tasks.reduce.outputs import REFOLD_GROUP, ReduceSummary, Standing
from tasks.reduce.task import reduce_run
from tasks.rundir import ACCOUNTING_FILE, GATE_FILE, LIVE_FILE, RunPaths, record_shards, remove_snapshot_outputs
from tasks.storage import InputNotFound
from tasks.storage.spill import Spill

POLL_SECONDS = 1.0
"""How often the job is looked at (at most; a snapshot interval below it looks as often as it snapshots)."""


class GateBreached(StageError):
    """A followed job's snapshot breached the gate and ``stop_on_breach`` ended the follow; the run is kept and resumable."""

    def __init__(self, reason: str, result: dict[str, Any]) -> None:
        super().__init__(reason)
        self.result = result


class FollowedReduce:
    """The one incremental reduce of a followed job, kept open across its polls.

    Each poll's fan-out hands it its finished groups in input order (``done``): main groups go to
    the folds at once, opened with the shards as they were at the first one; sidecar groups wait
    for the end, where they follow every main row. Every main attempt released is also kept (a
    spill), since the end's plan is made of them. Once the order cannot hold (the shards changed
    under the folds, a group that does not follow the last one folded) nothing more is folded
    and ``broken`` says why: the end then takes the full pass.
    """

    def __init__(self, ctx: RunContext, recorded: RecordedParams) -> None:
        self._ctx = ctx
        self._recorded = recorded
        self._stack = ExitStack()
        self.main: Spill[AttemptRef] = self._stack.enter_context(Spill())
        self.failures: list[AttemptRef] = []  # sidecar rows are few: a job's failed attempts
        self.feed: Feed | None = None
        self.shards: tuple[Shard, ...] = ()  # the shards the folds were opened with
        self.broken: str | None = None
        self._last_line = 0  # the output line of the last main attempt folded

    def done(self, shards: tuple[Shard, ...], group: list[AttemptRef]) -> None:
        """A poll's finished group, the next in input order among those the tail released."""
        if group[0].source != MAIN:
            self.failures += group
            return
        for attempt in group:
            self.main.add(attempt)
        if self.broken is not None:
            return
        if self.feed is None:
            self.shards = shards
            self.feed = open_reduce(replace(self._ctx, shards=shards), self._recorded, self._stack)
        if shards != self.shards:
            self.broken = "the job's shards changed after its first rows were folded"
        elif group[0].out_line != self._last_line + 1:
            self.broken = f"output line {group[0].out_line} came after line {self._last_line} was folded"
        else:
            self.feed.put(group)
            self._last_line = group[-1].out_line
            return
        get_run_logger().info("%s: the run will be finished by a full pass over the job", self.broken)

    def standing_known(self) -> bool:
        """Whether the folds can say how the run stands: opened by a first main group, and not broken."""
        return self.feed is not None and self.broken is None

    def standing(self) -> Standing | None:
        """The folds as they stand, for a snapshot (None before the first main group, or once broken)."""
        return self.feed.standing() if self.feed is not None and self.broken is None else None

    def finish(
        self,
        params: StageParams,
        ctx: RunContext,
        recorded: RecordedParams,
        tail: JobTail,
        timings: Timings,
        stack: ExitStack,
        pool: Executor | None,
    ) -> ProcessedJob:
        """The finished run: the folds finished over the tail's plan, or, where the incremental order did not hold, today's full pass."""
        reason = self.broken
        if reason is None and self.feed is None:
            reason = "no main row was folded"
        if reason is None and self.shards != ctx.shards:
            reason = "the job's shards changed after its first rows were folded"
        plan = None
        if reason is None:
            with timings.measure("discover_s"):
                made = tail.plan(self.main, self.failures)
            reason, plan = (made, None) if isinstance(made, str) else (None, stack.enter_context(made))
        if reason is not None or plan is None or self.feed is None:
            get_run_logger().info("the incremental reduce cannot stand (%s): a full pass over the job, as a post-hoc run", reason)
            self.close()
            remove_snapshot_outputs(ctx.run_dir)
            return process_job(params, ctx, recorded, timings, stack, running=pool, followed=True)
        feed = self.feed
        sidecar = itertools.islice(plan.attempts, self.main.count, None)  # in input order; their parts are made: only folded now
        while chunk := list(itertools.islice(sidecar, REFOLD_GROUP)):
            feed.put(chunk)
        timings.attempts_end()  # every attempt of the job ended with the last poll's fan-out
        try:
            with timings.measure("reduce_s"):
                reduced = reduce_run(ctx, plan.attempts, recorded.atif_all_or_nothing, feed)
                stack.enter_context(reduced.log)
        finally:
            self.close()
        timings.seconds["reduce_task_s"] = reduced.seconds
        timings.seconds["tables_s"] = reduced.tables_seconds
        return ProcessedJob(plan, reduced)

    def close(self) -> None:
        """Stop the folds (what they did not finish is discarded) and delete the spills."""
        self._stack.close()


class Snapshots:
    """Snapshots made one at a time on a thread of their own, so the follow goes on looking at the job.

    A snapshot writes its files inside ``writing``; once the end has begun (``end``) a snapshot
    still being made writes nothing more, so the end waits at most for files being written,
    never for a snapshot's documents; its artifacts and event are sent outside the lock, and the
    end ``join``s the thread only before publishing its own. A snapshot's error is raised by ``check`` in the loop
    (``GateBreached``); any other is logged: a snapshot is provisional, the follow goes on.
    """

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._ending = False

    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, make: Callable[[], object]) -> None:
        """Make a snapshot on a thread that sees the flow run's context (its logger, artifacts, events)."""
        context = contextvars.copy_context()

        def run() -> None:
            try:
                context.run(make)
            except GateBreached as breach:
                self._error = breach
            except Abandoned:
                pass
            except Exception as error:  # noqa: BLE001  # a snapshot is provisional: said, and the follow goes on
                if not self._ending:
                    context.run(get_run_logger().warning, "a snapshot failed: %s", error)

        self._thread = threading.Thread(target=run, name="evidence-stage-snapshot", daemon=True)
        self._thread.start()

    def check(self) -> None:
        """Raise what a finished snapshot raised for the follow (a breach with ``stop_on_breach``)."""
        if self._error is not None and not self.busy():
            error, self._error = self._error, None
            raise error

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Where a snapshot writes; raises ``Abandoned`` once the end has begun."""
        with self._lock:
            if self._ending:
                raise Abandoned
            yield

    def going_on(self) -> None:
        """Raise ``Abandoned`` once the end has begun (before a snapshot's artifacts and event)."""
        if self._ending:
            raise Abandoned

    def end(self) -> None:
        """From now on no snapshot writes a file (waits only for one being written)."""
        with self._lock:
            self._ending = True

    def join(self) -> None:
        """Wait for a snapshot thread still running (before the run's own artifacts and events)."""
        if self._thread is not None:
            self._thread.join()


class Abandoned(Exception):  # not an error: how a snapshot overtaken by the end stops
    """The end of the job began while a snapshot was being made: it writes nothing more."""


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


def start_snapshot(
    params: StageParams,
    ctx: RunContext,
    recorded: RecordedParams,
    started_at: datetime,
    tail: JobTail,
    reduce: FollowedReduce,
    snapshots: Snapshots,
    now: float,
) -> None:
    """Take what a snapshot needs of the tail here (the loop goes on changing it), and make the snapshot on its thread."""
    status = live_status(params, tail, now)
    try:
        described = tail.described() if reduce.standing_known() else None
    except InputNotFound:  # an input not there yet (the capture folder): this snapshot is live.json alone
        described = None
    snapshots.start(lambda: publish_snapshot(params, ctx, recorded, started_at, status, described, reduce, snapshots))


def publish_snapshot(
    params: StageParams,
    ctx: RunContext,
    recorded: RecordedParams,
    started_at: datetime,
    status: LiveStatus,
    described: JobPlan | None,
    reduce: FollowedReduce,
    snapshots: Snapshots,
) -> LiveStatus:
    """One snapshot from the folds' state: the documents as they stand, the live gate, ``live.json``, the report, the artifacts, the event.

    Raises:
        GateBreached: the gate is breached and ``stop_on_breach`` is set (after the snapshot is written).
        Abandoned: the end of the job began meanwhile (nothing more is written).
    """
    gate, published = None, None
    with ExitStack() as stack:
        if described is not None:
            stack.enter_context(described)
        standing = reduce.standing() if described is not None else None
        if described is not None and standing is not None:
            status = replace(status, unhealthy_share=unhealthy_share(standing.counts.verdicts))
            gate = live_gate(params, recorded, ctx, described.accounting, standing, status.rows)
            if gate is not None:
                status = replace(status, gate_breached=not gate["passed"])
            manifest = snapshot_manifest(run_record(params, recorded, ctx, ctx.run_id, started_at), recorded, described, standing, gate)
            with snapshots.writing():
                for location, data in standing.documents.items():
                    location.write_bytes(data)
                write_document(ctx.run_dir, ACCOUNTING_FILE, described.accounting)
                if gate is not None:
                    write_document(ctx.run_dir, GATE_FILE, gate)
                report_html, tables, _ = render_run_report(ctx.run_dir, manifest.finished(), standing.histograms, status.document())
                paths = RunPaths(ctx.run_dir)
                paths.manifest.write_chunks(manifest.json_chunks)
                paths.report.write_bytes(report_html.encode())
                write_live(ctx, status)
            published = manifest, tables
        else:
            with snapshots.writing():
                write_live(ctx, status)
    snapshots.going_on()  # the end publishes the same artifacts (after ``join``): a snapshot overtaken by it publishes none
    if published is not None:
        publish_artifacts(published[0], ctx.run_dir, published[1])  # the finished run's keys: each snapshot updates them
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


def snapshot_manifest(
    run: RunIdentity, recorded: RecordedParams, described: JobPlan, standing: Standing, gate: dict[str, Any] | None
) -> RunManifest:
    """A snapshot's ``manifest.json``: the job as read so far, and the attempts folded so far with their counts."""
    counts = standing.counts
    with AttemptLog() as none:  # build_manifest counts from a finished reduce's log: the standing's figures take their place
        reduced = ReduceSummary(
            none,
            rows=counts.rows,
            atif_files=counts.atif_files,
            atif_rejections=counts.atif_rejections,
            verdicts=counts.verdicts,
            histograms=standing.histograms,
            scores=standing.scores,
            fold_problems=standing.fold_problems,
        )
        manifest = build_manifest(run=run, params=recorded, plan=described, reduced=reduced, timings={})
    folded = replace(manifest.counts, attempts=counts.attempts, by_status=counts.by_status, repairs=standing.repairs)
    return replace(manifest, counts=folded, attempts=Streamed(lambda: standing.entries), gate=gate)


def live_gate(
    params: StageParams, recorded: RecordedParams, ctx: RunContext, accounting: dict[str, Any], standing: Standing, rows: int
) -> dict[str, Any] | None:
    """The gate on a snapshot once ``gate_min_rollouts`` rows are in (None before, or ungated): the debt shares
    measured over the rollouts answered so far (``evidence.answered_accounting``), the health and scores as they stand."""
    limits = GateLimits.model_validate(recorded.gate or {}).named()
    if not limits or rows < (params.gate_min_rollouts or 1):
        return None
    paths = ctx.paths
    summary, scores = (orjson.loads(standing.documents[location]) for location in (paths.quality_summary, paths.scores))
    return evaluate_gate(limits, answered_accounting(accounting), summary, scores)
