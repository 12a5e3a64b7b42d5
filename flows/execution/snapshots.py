"""A followed job's snapshots: the run's outputs as they stand, made from the folds' state on a thread of their own.

Each writes the documents the folds give, ``live.json`` (``evidence.LiveStatus``), a report that
says it is live and provisional, the gate once ``gate_min_rollouts`` rows are in, the artifacts
and a Prefect event with the counts; once the end of the job begins, a snapshot writes nothing more.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
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
    evaluate_gate,
    gate_reason,
    outstanding_rollouts,
    unhealthy_share,
)
from flows.execution.followed_reduce import FollowedReduce
from flows.execution.resolve import run_record
from flows.params.gate import GateLimits
from flows.params.stage import StageParams
from tasks.attempts.context import RunContext
from tasks.discover.scan import JobPlan
from tasks.follow.tail import JobTail
from tasks.publish.events import job_gate_breached, job_snapshot
from tasks.publish.report import render_run_report
from tasks.publish.task import build_manifest, emit, publish_artifacts, write_document
from tasks.reduce.attempt_log import AttemptLog
from tasks.reduce.outputs import ReduceSummary, Standing
from tasks.rundir import ACCOUNTING_FILE, GATE_FILE, LIVE_FILE, RunPaths
from tasks.storage import InputNotFound


class GateBreached(StageError):
    """A followed job's snapshot breached the gate and ``stop_on_breach`` ended the follow; the run is kept and resumable."""

    def __init__(self, reason: str, result: dict[str, Any]) -> None:
        super().__init__(reason)
        self.result = result


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
