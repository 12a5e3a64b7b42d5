"""The fan-out reads groups from the plan as it goes: a bounded window of group tasks in flight."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Self

import pytest
from prefect.utilities.annotations import quote

import flows.execution.groups
from flows.execution.groups import GroupSizes, fan_out, make_groups
from flows.execution.runners import runner_slots
from flows.params.stage import MAX_GROUP, MAX_TASK_RUNS, MIN_GROUP, StageParams
from tasks.attempts.group import GroupSummary
from tasks.discover.refs import FAILURES, MAIN, AttemptRef
from tasks.storage import Location


def _attempt(source: str, line: int) -> AttemptRef:
    return AttemptRef(source, line, 0, 1, line, None, None, False, "")


class _Runner:
    """A task runner that records how many submitted groups are not finished yet."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.most = 0

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def submit(self, task: Any, parameters: dict[str, Any]) -> Any:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        runner = self

        class Future:
            def result(self) -> GroupSummary:
                runner.in_flight -= 1
                assert isinstance(parameters["attempts"], quote), "Prefect must not walk the attempts"
                return GroupSummary(processed=len(parameters["attempts"].unwrap()), seconds=1.0)

        return Future()


class _Progress:
    def __init__(self, total: int, job_id: str) -> None:
        self.done = 0
        assert job_id == "job"  # the progress artifact's key is its job's own

    def advance(self, count: int) -> None:
        self.done += count


def test_groups_are_contiguous_per_source_and_bounded() -> None:
    attempts = [_attempt(MAIN, i) for i in range(1, 6)] + [_attempt(FAILURES, i) for i in range(1, 3)]
    groups = make_groups(iter(attempts), GroupSizes(len(attempts), 2, workers=2))
    assert [[(a.source, a.line) for a in g] for g in groups] == [
        [(MAIN, 1), (MAIN, 2)],
        [(MAIN, 3), (MAIN, 4)],
        [(MAIN, 5)],
        [(FAILURES, 1), (FAILURES, 2)],
    ]


def _guided(total: int, workers: int) -> list[int]:
    return [len(group) for group in make_groups((_attempt(MAIN, i) for i in range(1, total + 1)), GroupSizes(total, None, workers))]


def test_default_groups_start_large_and_shrink_to_the_minimum_at_the_end() -> None:
    sizes = _guided(2_120, workers=2)
    assert sizes[0] == 530
    assert sizes == sorted(sizes, reverse=True)
    assert sizes[-3:-1] == [MIN_GROUP, MIN_GROUP]
    assert sum(sizes) == 2_120
    assert len(sizes) < 2_120 / MIN_GROUP / 2  # half the task runs of fixed minimum groups, or fewer


def test_guided_groups_follow_a_total_that_discovery_corrects_as_it_scans() -> None:
    """A group is cut at the size its start gets with the total as known now."""
    known = {"total": 4_240}  # an estimate of twice the job, until the scan has read more of it

    def attempts() -> Any:
        for line in range(1, 2_121):
            if line == 600:
                known["total"] = 2_120
            yield _attempt(MAIN, line)

    sizes = [len(group) for group in make_groups(attempts(), GroupSizes(lambda: known["total"], None, workers=2))]
    assert sizes[:2] == [599, 381]  # 1,000 (MAX_GROUP) wanted until the estimate fell; then a quarter of what is left
    assert sum(sizes) == 2_120


@pytest.mark.parametrize(("total", "workers"), [(1, 2), (150, 2), (20_000, 2), (20_000, 16), (100_000, 2)])
def test_default_groups_keep_their_bounds(total: int, workers: int) -> None:
    sizes = _guided(total, workers)
    assert sum(sizes) == total
    assert len(sizes) <= MAX_TASK_RUNS
    assert all(size >= MIN_GROUP for size in sizes[:-1])
    assert all(size <= max(MAX_GROUP, -(-total // MAX_TASK_RUNS)) for size in sizes)


@pytest.mark.parametrize("workers", [1, 3])
def test_fan_out_keeps_one_group_beyond_the_runner_slots_in_flight(monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    runner = _Runner()
    monkeypatch.setattr(flows.execution.groups, "build_runner", lambda params: runner)
    monkeypatch.setattr(flows.execution.groups, "Progress", _Progress)
    params = StageParams(rollouts="r", capture_dir="c", output="o", task_runner="thread", max_workers=workers)
    pulled = 0

    def groups() -> Any:
        nonlocal pulled
        for i in range(40):
            pulled += 1
            assert runner.in_flight <= runner_slots(params)  # never read ahead of the window
            yield [_attempt(MAIN, i)]

    ctx = SimpleNamespace(run_dir=Location("memory://out/job/runs/r1"))  # what the stubbed runner and progress read of it
    done: list[int] = []
    work = fan_out(params, ctx, groups(), 40, None, lambda group: done.extend(attempt.line for attempt in group))  # type: ignore[arg-type]
    assert (work.seconds, work.runs, work.processed, pulled, runner.in_flight) == (40.0, 40, 40, 40, 0)
    assert done == list(range(40))  # every group handed on once, in input order
    assert runner.most == runner_slots(params) + 1
