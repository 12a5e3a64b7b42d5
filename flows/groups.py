"""How a job's attempts become group tasks: group sizes, contiguous groups, a bounded window."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Executor

from prefect.futures import PrefectFuture

from flows.params import MAX_TASK_RUNS, MIN_GROUP, StageParams
from flows.progress import Progress
from flows.runners import build_runner, runner_slots, shared_api
from tasks.attempt import GroupSummary
from tasks.context import RunContext
from tasks.discover import AttemptRef
from tasks.fanout import process_group

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


