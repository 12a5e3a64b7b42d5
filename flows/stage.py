"""The flow for one job: resolve the run, discover, fan out over attempt groups, reduce, publish."""

from __future__ import annotations

import fnmatch
import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor
from contextlib import ExitStack
from datetime import datetime, timezone
from importlib.metadata import version
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import PrefectFuture

from flows.params import StageParams, config_fingerprint
from flows.progress import Progress
from flows.runners import attempt_pool, build_runner, runner_slots, shared_api
from tasks.attempt import GroupSummary
from tasks.context import RunContext
from tasks.discover import AttemptRef, JobPlan, check_inputs, discover
from tasks.fanout import process_group
from tasks.naming import default_failures_url, job_id_for, new_run_id
from tasks.publish import build_manifest, publish_artifacts, publish_run
from tasks.reduce import reduce_run
from tasks.retry import retry_on_transient
from tasks.report import render_run_report
from tasks.runs import (
    PARAMS_FILE,
    RunConflict,
    check_resume,
    claim,
    discard_temporaries,
    is_complete,
    recorded_params,
    run_dir_of,
    update_latest,
)
from tasks.storage import Location

# A task run costs ~50 ms of CPU in the flow process and as much in the Prefect server (measured
# with tests/bench on two cores), so the default keeps task runs few: at most MAX_TASK_RUNS, and
# at least MIN_GROUP attempts (~0.7 s of work) each. Retries and resume stay per attempt.
MAX_TASK_RUNS = 32
MIN_GROUP = 100


def package_version() -> str:
    return version("evidence-stage")


def group_size(total: int, requested: int | None) -> int:
    """Attempts per task: as asked, else MIN_GROUP, or more to keep a run at ≤ MAX_TASK_RUNS task runs."""
    return requested or max(MIN_GROUP, math.ceil(total / MAX_TASK_RUNS))


def make_groups(attempts: Iterable[AttemptRef], size: int) -> Iterator[list[AttemptRef]]:
    """Contiguous groups from one source each, so a group's rows are one ranged read."""
    group: list[AttemptRef] = []
    for attempt in attempts:
        if group and (len(group) >= size or group[-1].source != attempt.source):
            yield group
            group = []
        group.append(attempt)
    if group:
        yield group


def subset_filter(rollout_ids: list[str], rollout_glob: str | None) -> Callable[[AttemptRef], bool]:
    """Whether an attempt is chosen by rollout id or glob for a subset rerun."""
    wanted = set(rollout_ids)

    def chosen(attempt: AttemptRef) -> bool:
        rollout_id = attempt.rollout_id
        if rollout_id is None:
            return False
        return rollout_id in wanted or (rollout_glob is not None and fnmatch.fnmatchcase(rollout_id, rollout_glob))

    return chosen


def is_subset(recorded: dict[str, Any]) -> bool:
    """Whether a run's recorded parameters select a subset of the job's attempts."""
    return bool(recorded["rollout_ids"]) or recorded["rollout_glob"] is not None


@task(name="discover-job", cache_policy=NO_CACHE, persist_result=False, retries=2, retry_condition_fn=retry_on_transient)
def discover_job(main: Location, failures: Location | None, capture_dir: Location) -> JobPlan:
    return discover(main, failures, capture_dir)


def output_params(params: StageParams, job_id: str) -> dict[str, Any]:
    return {
        "rollouts": params.rollouts,
        "capture_dir": params.capture_dir,
        "failures": params.failures,
        "job_id": job_id,
        "session_id": params.session_id or job_id,
        "agent_version": params.agent_version or package_version(),
        "ignored_checks": list(params.ignored_checks),
        "atif_all_or_nothing": params.atif_all_or_nothing,
        "rollout_ids": list(params.rollout_ids),
        "rollout_glob": params.rollout_glob,
    }


def resolve_run(params: StageParams) -> tuple[RunContext, Location, dict[str, Any], str]:
    """Locations, the run id, and the recorded parameters; claims the run directory.

    On ``resume`` the recorded parameters win (explicit conflicting ones are an error), stale
    temp files of the killed process are removed, and a complete full run gets the LATEST
    update it may have been killed before.
    """
    options = params.storage_options
    main = Location(params.rollouts, options)
    failures_url = params.failures or default_failures_url(params.rollouts)
    failures = Location(failures_url, options)
    if params.failures is None and not failures.exists():
        failures = None
    job_id = params.job_id or job_id_for(params.rollouts)
    output = Location(params.output, options)
    run_id = params.resume or params.run_id or new_run_id()
    run_dir = run_dir_of(output, job_id, run_id)
    requested = output_params(params, job_id)
    check_inputs(main, Location(params.capture_dir, options))
    if params.resume:
        recorded = recorded_params(run_dir)
        check_resume(recorded, _explicit(params, requested))
        requested = recorded
        discard_temporaries(run_dir)
        if is_complete(run_dir) and not is_subset(recorded):
            update_latest(output.child(job_id), run_id)  # a kill between _SUCCESS and LATEST
    else:
        claim(run_dir, requested)
    ctx = RunContext(
        run_dir=run_dir,
        main=main,
        failures=failures,
        capture_dir=Location(params.capture_dir, options),
        session_id=requested["session_id"],
        agent_version=requested["agent_version"],
        exporter_version=package_version(),
        ignored_checks=tuple(requested["ignored_checks"]),
        resume=bool(params.resume),
    )
    return ctx, output.child(job_id), requested, run_id


def _explicit(params: StageParams, requested: dict[str, Any]) -> dict[str, Any]:
    """The output parameters the caller set explicitly (a resume must agree with them)."""
    return {k: requested[k] for k in requested if k in params.model_fields_set or k == "job_id"}


def preflight(params: StageParams) -> None:
    """The checks that stop a run before it starts, made without starting a flow run.

    The CLI calls this first so a typo or a taken run id costs one line, not a failed flow run;
    ``resolve_run`` repeats the checks inside the flow (deployments do not pass through here).
    """
    options = params.storage_options
    check_inputs(Location(params.rollouts, options), Location(params.capture_dir, options))
    job_id = params.job_id or job_id_for(params.rollouts)
    run_id = params.resume or params.run_id
    if run_id is None:
        return
    run_dir = run_dir_of(Location(params.output, options), job_id, run_id)
    if params.resume:
        check_resume(recorded_params(run_dir), _explicit(params, output_params(params, job_id)))
    elif run_dir.child(PARAMS_FILE).exists():
        raise RunConflict(f"run id already exists: {run_dir.url} (use --resume to continue it)")


def fan_out(
    params: StageParams, ctx: RunContext, groups: Iterator[list[AttemptRef]], total: int, pool: Executor | None
) -> tuple[float, int]:
    """Run a task per group, a bounded window of them in flight; return the in-task seconds and the group count.

    Groups are read from the plan's spill as the window moves, so the flow holds the attempts
    of the groups in flight, not the job's. Each attempt's status is in its part.
    """
    task_seconds = 0.0
    count = 0
    progress = Progress(total=total)
    in_flight: deque[PrefectFuture[GroupSummary]] = deque()

    def finish_oldest() -> None:
        nonlocal task_seconds
        summary = in_flight.popleft().result()
        task_seconds += summary.seconds
        progress.advance(summary.processed + summary.skipped)

    with shared_api(params), build_runner(params) as runner:
        for group in groups:
            count += 1
            in_flight.append(runner.submit(process_group, {"ctx": ctx, "attempts": group, "pool": pool}))
            if len(in_flight) > runner_slots(params):
                finish_oldest()
        while in_flight:
            finish_oldest()
    return task_seconds, count


@flow(name="evidence-stage", log_prints=False, persist_result=False)
def stage_flow(params: StageParams) -> dict[str, Any]:
    """Process one evaluation job into a new (or resumed) run directory."""
    logger = get_run_logger()
    started_at = datetime.now(timezone.utc)
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    ctx, job_dir, recorded, run_id = resolve_run(params)
    if params.resume and is_complete(ctx.run_dir):
        logger.info("run %s is already complete; nothing to do", run_id)
        return {"run_id": run_id, "run_dir": ctx.run_dir.url, "already_complete": True}
    subset = is_subset(recorded)  # from the run itself: a resumed subset run stays a subset
    with ExitStack() as stack:
        with attempt_pool(params) as pool:  # its workers start while discovery runs
            plan = stack.enter_context(discover_job(ctx.main, ctx.failures, ctx.capture_dir))
            timings["discover_s"] = time.perf_counter() - clock
            timings["discover_task_s"] = plan.seconds
            if subset:
                plan.select(subset_filter(recorded["rollout_ids"], recorded["rollout_glob"]))
            total = plan.attempts.count
            size = group_size(total, params.attempts_per_task)
            logger.info("%d attempts in groups of %d; %d orphan captures; %d skipped lines", total, size, len(plan.orphans), len(plan.skipped))
            clock = time.perf_counter()
            task_seconds, groups = fan_out(params, ctx, make_groups(plan.attempts, size), total, pool)
        timings["fan_out_s"] = time.perf_counter() - clock
        timings["in_task_s"] = task_seconds
        timings["fan_out_parallelism"] = min(params.max_workers, groups)
        clock = time.perf_counter()
        reduced = reduce_run(ctx, plan.attempts, recorded["atif_all_or_nothing"])
        stack.enter_context(reduced.log)
        timings["reduce_s"] = time.perf_counter() - clock
        timings["reduce_task_s"] = reduced.seconds
        run = run_record(params, recorded, ctx, run_id, started_at, subset)
        manifest = build_manifest(
            run=run, params=recorded, config_fingerprint=config_fingerprint(recorded),
            plan=plan, reduced=reduced, timings=timings,
        )
        clock = time.perf_counter()
        report_html, tables = render_run_report(ctx.run_dir, manifest, reduced.histograms)
        manifest["timings"]["report_s"] = round(time.perf_counter() - clock, 3)
        publish_run(ctx.run_dir, job_dir, manifest, report_html, not subset)
    publish_artifacts(manifest, ctx.run_dir, tables)
    logger.info("run %s complete: %s", run_id, manifest["counts"])
    return {"run_id": run_id, "run_dir": ctx.run_dir.url, "counts": manifest["counts"], "already_complete": False}


def run_record(
    params: StageParams, recorded: dict[str, Any], ctx: RunContext, run_id: str, started_at: datetime, subset: bool
) -> dict[str, Any]:
    """The manifest's ``run`` section: identity, scope and times of this run."""
    return {
        "run_id": run_id,
        "job_id": recorded["job_id"],
        "run_dir": ctx.run_dir.url,
        "scope": "subset" if subset else "full",
        "package_version": package_version(),
        "started_at": started_at.isoformat(),
        "finished_at": datetime.now(timezone.utc).isoformat(),
        "resumed": bool(params.resume),
    }
