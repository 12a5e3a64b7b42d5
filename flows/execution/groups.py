"""How a job's attempts become group tasks: group sizes, contiguous groups, a bounded window."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Executor
from dataclasses import dataclass

from prefect.futures import PrefectFuture

from flows.execution.progress import Progress
from flows.execution.runners import build_runner, runner_slots, shared_api, task_argument
from flows.params.stage import MAX_GROUP, MAX_TASK_RUNS, MIN_GROUP, StageParams
from tasks.attempts.context import RunContext
from tasks.attempts.group import GroupSummary
from tasks.attempts.task import process_group
from tasks.discover.refs import AttemptRef

GUIDED_SHARES = 2
"""Without a requested size, a group takes ``1 / (GUIDED_SHARES * workers)`` of the attempts not yet grouped."""


Total = int | Callable[[], int]
"""A count of attempts, or a function giving it as it is known so far (an estimate until discovery has ended)."""


def counted(total: Total) -> int:
    return total if isinstance(total, int) else total()


@dataclass(frozen=True, slots=True)
class GroupSizes:
    """How many attempts each group task gets, in turn.

    As asked (``requested``), else guided self-scheduling: each group takes a share of what is
    left, so a job is a few large groups that shrink to ``MIN_GROUP`` at its end, where a
    worker would otherwise wait for another's last large group. Never more than ``MAX_GROUP``
    (the flow holds the attempts of the groups in flight), nor more task runs than
    ``MAX_TASK_RUNS`` (that bound wins over ``MAX_GROUP``).

    ``total`` is the job's attempts, or while discovery is still scanning them its estimate
    (``tasks.discover.scan.Discovery.estimate``), read again for every attempt grouped.
    """

    total: Total
    requested: int | None
    workers: int

    def next(self, grouped: int) -> int:
        """The size of the next group once ``grouped`` attempts are in groups."""
        if self.requested:
            return self.requested
        total = counted(self.total)
        guided = math.ceil((total - grouped) / (GUIDED_SHARES * self.workers))
        return max(MIN_GROUP, math.ceil(total / MAX_TASK_RUNS), min(MAX_GROUP, guided))

    def describe(self) -> str:
        """The sizes for the run's log: ``100``, or ``530 down to 100``."""
        first, last = self.next(0), self.next(counted(self.total))
        return str(first) if first == last else f"{first} down to {last}"


def make_groups(attempts: Iterable[AttemptRef], sizes: GroupSizes) -> Generator[list[AttemptRef], None, None]:
    """Contiguous groups from one input file each, so a group's rows are one ranged read.

    A group is cut once it holds the size its start gets with the total as known now: attempts
    streamed from discovery make the total an estimate that the scan corrects as it goes.
    """
    group: list[AttemptRef] = []
    grouped = 0
    for attempt in attempts:
        if group and (len(group) >= sizes.next(grouped) or (group[-1].shard, group[-1].source) != (attempt.shard, attempt.source)):
            yield group
            grouped += len(group)
            group = []
        group.append(attempt)
    if group:
        yield group


def fan_out(
    params: StageParams,
    ctx: RunContext,
    groups: Iterator[list[AttemptRef]],
    total: Total,
    pool: Executor | None,
    done: Callable[[list[AttemptRef]], None],
    progress: Progress | None = None,
) -> GroupSummary:
    """Run a task per group, a bounded window of them in flight; return their summaries added up.

    Groups are pulled as the window moves (from discovery's scan as it plans them, in a run), so
    the flow holds the attempts of the groups in flight, not the job's. Each attempt's status is in its part. Each group is
    handed to ``done`` once its task and those of every group before it have finished (in
    input order, the order the reduce consumes them). A followed job passes the one ``progress``
    it keeps for all its batches of new rows. A ``total`` that is a function (discovery's
    estimate while it scans) is read again as each group finishes, into the progress total.
    """
    summaries: list[GroupSummary] = []  # one per task run: a few dozen at most
    if progress is None:
        progress = Progress(total=counted(total), job_id=ctx.run_dir.parent().parent().name)  # <output>/<job id>/runs/<run id>
    in_flight: deque[tuple[list[AttemptRef], PrefectFuture[GroupSummary]]] = deque()

    def finish_oldest() -> None:
        group, future = in_flight.popleft()
        summary = future.result()
        summaries.append(summary)
        done(group)
        if not isinstance(total, int):
            progress.total = total()
        progress.advance(summary.processed + summary.skipped)

    with shared_api(params), build_runner(params) as runner:
        for group in groups:
            arguments = {"ctx": task_argument(params, ctx), "attempts": task_argument(params, group), "pool": pool}
            in_flight.append((group, runner.submit(process_group, arguments)))
            if len(in_flight) > runner_slots(params):
                finish_oldest()
        while in_flight:
            finish_oldest()
    return GroupSummary.total(summaries)
