"""How a job's attempts become group tasks (group sizes, contiguous groups, a bounded window), and the reduce that follows them."""

from __future__ import annotations

import contextvars
import math
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import contextmanager

from prefect.futures import PrefectFuture

from flows.params import MAX_TASK_RUNS, MIN_GROUP, StageParams
from flows.progress import Progress
from flows.runners import build_runner, runner_slots, shared_api
from tasks.attempt import GroupSummary
from tasks.context import RunContext
from tasks.discover import AttemptRef
from tasks.fanout import process_group
from tasks.frontier import Frontier
from tasks.reduce import ReduceSummary, reduce_run
from tasks.spill import Spill

def group_size(total: int, requested: int | None) -> int:
    """Attempts per task: as asked, else MIN_GROUP, or more to keep a run at ≤ MAX_TASK_RUNS task runs."""
    return requested or max(MIN_GROUP, math.ceil(total / MAX_TASK_RUNS))


def make_groups(attempts: Iterable[AttemptRef], size: int) -> Iterator[list[AttemptRef]]:
    """Contiguous groups from one input file each, so a group's rows are one ranged read."""
    group: list[AttemptRef] = []
    for attempt in attempts:
        if group and (len(group) >= size or (group[-1].shard, group[-1].source) != (attempt.shard, attempt.source)):
            yield group
            group = []
        group.append(attempt)
    if group:
        yield group


def fan_out(
    params: StageParams,
    ctx: RunContext,
    groups: Iterator[list[AttemptRef]],
    total: int,
    pool: Executor | None,
    frontier: Frontier,
) -> tuple[float, int]:
    """Run a task per group, a bounded window of them in flight; return the in-task seconds and the group count.

    Groups are read from the plan's spill as the window moves, so the flow holds the attempts
    of the groups in flight, not the job's. Each attempt's status is in its part. Groups are
    finished oldest first, and ``frontier`` advances past each (stopped however this ends).
    """
    task_seconds = 0.0
    count = 0
    progress = Progress(total=total)
    in_flight: deque[tuple[PrefectFuture[GroupSummary], int]] = deque()

    def finish_oldest() -> None:
        nonlocal task_seconds
        future, size = in_flight.popleft()
        summary = future.result()
        task_seconds += summary.seconds
        progress.advance(summary.processed + summary.skipped)
        frontier.advance(size)

    try:
        with shared_api(params), build_runner(params) as runner:
            for group in groups:
                count += 1
                in_flight.append((runner.submit(process_group, {"ctx": ctx, "attempts": group, "pool": pool}), len(group)))
                if len(in_flight) > runner_slots(params):
                    finish_oldest()
            while in_flight:
                finish_oldest()
    finally:
        frontier.stop()
    return task_seconds, count


@contextmanager
def reduce_alongside(ctx: RunContext, attempts: Spill[AttemptRef], all_or_nothing: bool, frontier: Frontier) -> Iterator[Future[ReduceSummary]]:
    """The reduce task, started now in a thread of the flow process and following ``frontier``.

    The caller takes its result after the block (the reduce's tail runs while the attempt pool
    shuts down). If the block fails, the frontier is stopped, so the reduce ends at once, and
    leaving waits for it: its temporary files are gone before the error propagates. The thread
    runs in a copy of this context, so Prefect records the reduce as a task run of this flow run.
    """
    thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reduce")
    reducing = thread.submit(contextvars.copy_context().run, reduce_run, ctx, attempts, all_or_nothing, frontier)
    try:
        yield reducing
    except BaseException:
        frontier.stop()
        reducing.exception()  # waits: FanOutStopped, or whatever else ended it first
        raise
    finally:
        thread.shutdown(wait=False)
