"""A followed job's one incremental reduce, kept open across the follow's polls (``flows.execution.follow``).

Each poll's fan-out hands it finished groups in input order; snapshots read the folds' state
(``flows.execution.snapshots``), and the end finishes the same folds over the plan the tail's
reading makes, or, where the incremental order could not hold, runs the full pass a post-hoc run makes.
"""

from __future__ import annotations

import itertools
from concurrent.futures import Executor
from contextlib import ExitStack
from dataclasses import replace

from prefect import get_run_logger

from evidence import RecordedParams
from flows.execution.job import ProcessedJob, Timings, open_reduce, process_job
from flows.params.stage import StageParams
from tasks.attempts.context import RunContext
from tasks.discover.refs import MAIN, AttemptRef
from tasks.follow.tail import JobTail
from tasks.inputs.shards import Shard
from tasks.reduce.feed import Feed
from tasks.reduce.outputs import REFOLD_GROUP, Standing
from tasks.reduce.task import reduce_run
from tasks.rundir import remove_snapshot_outputs
from tasks.storage.spill import Spill


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
