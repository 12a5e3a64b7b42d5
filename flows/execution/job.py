"""One run's journey after it is claimed: discover, fan out, reduce (``process_job``), then
judge and publish (``publish_job``), each step timed into the manifest's ``timings``.

Kept out of ``flows/stage.py`` so that file holds the flow alone (see its docstring); the
tasks these steps call run as task runs of the flow that calls them.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Iterator
from concurrent.futures import Executor
from contextlib import ExitStack, closing, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime

from prefect import get_run_logger

from evidence import RecordedParams, RunManifest
from flows.execution.groups import GroupSizes, fan_out, make_groups
from flows.execution.progress import Progress
from flows.execution.resolve import NothingToRun, run_record, subset_described, subset_filter, tell
from flows.execution.runners import attempt_pool, parallel_groups
from flows.params.gate import GateLimits
from flows.params.stage import StageParams
from tasks.attempts.context import RunContext
from tasks.attempts.parts import ReusedParts
from tasks.discover.refs import AttemptRef
from tasks.discover.scan import Discovery, JobPlan
from tasks.discover.task import discover_job
from tasks.publish.gate import judge_run
from tasks.publish.report import render_run_report
from tasks.publish.task import build_manifest, parts_removed_meanwhile, publish_artifacts, publish_run, write_document
from tasks.reduce.feed import Feed
from tasks.reduce.outputs import ReduceSummary, RunFolds
from tasks.reduce.task import preload_libraries, reduce_run
from tasks.rundir import ACCOUNTING_FILE
from tasks.storage import Location


@dataclass
class Timings:
    """Wall-clock seconds per step of the run, as the manifest records them."""

    seconds: dict[str, float] = field(default_factory=dict)
    attempts_ended: float | None = None  # perf_counter when the flow saw the last group's attempts end

    def attempts_end(self) -> None:
        """The run's attempts (every group so far) have ended: the tail starts now."""
        self.attempts_ended = time.perf_counter()

    def tail(self) -> float:
        """Seconds since the last attempt ended (since the fan-out ended, for a run of none)."""
        assert self.attempts_ended is not None, "the tail is measured after the fan-out"
        return time.perf_counter() - self.attempts_ended

    @contextmanager
    def measure(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = time.perf_counter() - started


@dataclass(frozen=True)
class ProcessedJob:
    """What discovery and the reduce found (their spills live until the caller's stack closes)."""

    plan: JobPlan
    reduced: ReduceSummary


def process_job(
    params: StageParams,
    ctx: RunContext,
    recorded: RecordedParams,
    timings: Timings,
    stack: ExitStack,
    *,
    running: Executor | None = None,
    followed: bool = False,
) -> ProcessedJob:
    """Discover the job's attempts and process them in groups on the attempt pool as discovery plans
    them, folding each finished group beside the fan-out; then the reduce's end.

    The fan-out pulls its groups from the scan (``tasks.discover.scan.Discovery``): the first
    starts once a group's worth of rows is scanned, and the group sizes and the progress total
    follow discovery's estimate until the scan has ended. A followed job
    (``flows.execution.follow``) passes the attempt pool it keeps open (``running``); otherwise a
    pool is started for the run. Its passes (``followed``) publish no progress of their own: the
    follow's counts the rows as they land.
    """
    with attempt_pool(params) if running is None else nullcontext(running) as pool:  # its workers scan, then process groups
        started = time.perf_counter()
        keep = subset_filter(recorded.rollout_ids, recorded.rollout_glob) if recorded.is_subset else None  # a resumed subset stays one
        discovery = stack.enter_context(discover_job(ctx.shards, ctx.capture_dir, pool, keep))
        sizes = GroupSizes(discovery.estimate, params.attempts_per_task, parallel_groups(params))
        with closing(make_groups(_planned(discovery, ctx, sizes), sizes)) as groups:
            first = next(groups, None)
            timings.seconds["discover_s"] = time.perf_counter() - started  # what the fan-out waited for
            if first is None and keep is not None:
                raise NothingToRun(f"{subset_described(recorded)} selects no rollout of the job: nothing to run (the run was not kept)")
            feed = open_reduce(ctx, recorded, stack)

            def done(group: list[AttemptRef]) -> None:
                timings.attempts_end()
                feed.put(group)  # folded beside the fan-out

            with timings.measure("fan_out_s"):
                progress = Progress(discovery.estimate(), ctx.job_id, published=False) if followed else None
                pulled = itertools.chain([first] if first is not None else [], groups)
                work = fan_out(params, ctx, pulled, discovery.estimate, pool, done, progress)
        if timings.attempts_ended is None:  # no group: the tail starts where the fan-out ended
            timings.attempts_end()
    timings.seconds["discover_task_s"] = discovery.seconds
    timings.seconds["in_task_s"] = work.seconds
    timings.seconds["fan_out_parallelism"] = min(parallel_groups(params), work.runs)
    with timings.measure("reduce_s"):
        reduced = reduce_run(ctx, discovery.plan.attempts, recorded.atif_all_or_nothing, feed)
        stack.enter_context(reduced.log)
    timings.seconds["reduce_task_s"] = reduced.seconds
    timings.seconds["tables_s"] = reduced.tables_seconds
    return ProcessedJob(discovery.plan, reduced)


def _planned(discovery: Discovery, ctx: RunContext, sizes: GroupSizes) -> Iterator[AttemptRef]:
    """The attempts as discovery plans them; once it has ended, the run's log says what it found
    and a resume what it reuses (counted as the attempts pass, before their groups run)."""
    reused = ReusedParts(ctx.run_dir) if ctx.resume else None
    for attempt in discovery.attempts():
        if reused is not None:
            reused.add(attempt)
        yield attempt
    plan = discovery.plan
    if reused is not None:
        tell(f"resumed: {reused.count} attempts reused, {plan.attempts.count - reused.count} to go")
    get_run_logger().info(
        "%d attempts in groups of %s; %d orphan captures; %d skipped lines",
        plan.attempts.count,
        sizes.describe(),
        len(plan.orphans),
        len(plan.skipped),
    )


def open_reduce(ctx: RunContext, recorded: RecordedParams, stack: ExitStack) -> Feed:
    """The run's incremental reduce, fed finished groups in input order beside a fan-out (a run's, or a followed job's polls);
    its imports start loading while the attempt pool works."""
    preload_libraries()
    return stack.enter_context(Feed(functools.partial(RunFolds, ctx, recorded.atif_all_or_nothing)))


def publish_job(
    params: StageParams,
    ctx: RunContext,
    job_dir: Location,
    recorded: RecordedParams,
    run_id: str,
    started_at: datetime,
    job: ProcessedJob,
    timings: Timings,
) -> tuple[RunManifest, list[str]]:
    """Accounting, the quality gate, the report and the manifest, then ``_SUCCESS`` and LATEST;
    the manifest and the names of the outputs the run has."""
    write_document(ctx.run_dir, ACCOUNTING_FILE, job.plan.accounting)
    gate = judge_run(ctx.run_dir, GateLimits.model_validate(recorded.gate or {}).named(), job.plan.accounting)
    run = run_record(params, recorded, ctx, run_id, started_at)
    manifest = replace(build_manifest(run=run, params=recorded, plan=job.plan, reduced=job.reduced, timings=timings.seconds), gate=gate)
    clock = time.perf_counter()
    report_html, tables, outputs = render_run_report(ctx.run_dir, manifest.finished(), job.reduced.histograms)
    manifest = manifest.with_timing("report_s", time.perf_counter() - clock)
    manifest = manifest.with_timing("tail_s", timings.tail())  # up to manifest.json: _SUCCESS follows it and report.html at once
    has_rows = any(manifest.counts.rows.values())  # a run of no rows (inputs changed since the check) never stands as LATEST
    publish_run(ctx.run_dir, job_dir, manifest, report_html, not recorded.is_subset and has_rows)
    with parts_removed_meanwhile(ctx.run_dir, params.keep_parts):
        publish_artifacts(manifest, ctx.run_dir, tables)
    return manifest, outputs
