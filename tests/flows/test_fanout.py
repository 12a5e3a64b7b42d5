"""The fan-out reads groups from the plan as it goes: a bounded window of group tasks in flight."""

from __future__ import annotations

from typing import Any

import pytest

import flows.groups
from flows.params import StageParams
from flows.runners import runner_slots
from flows.groups import fan_out, make_groups
from tasks.attempt import GroupSummary
from tasks.discover import FAILURES, MAIN, AttemptRef


def _attempt(source: str, line: int) -> AttemptRef:
    return AttemptRef(source, line, 0, 1, line, None, None, False, "")


class _Runner:
    """A task runner that records how many submitted groups are not finished yet."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.most = 0

    def __enter__(self) -> _Runner:
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
                return GroupSummary(processed=len(parameters["attempts"]), seconds=1.0)

        return Future()


class _Progress:
    def __init__(self, total: int) -> None:
        self.done = 0

    def advance(self, count: int) -> None:
        self.done += count


def test_groups_are_contiguous_per_source_and_bounded() -> None:
    attempts = [_attempt(MAIN, i) for i in range(1, 6)] + [_attempt(FAILURES, i) for i in range(1, 3)]
    groups = make_groups(iter(attempts), 2)
    assert [[(a.source, a.line) for a in g] for g in groups] == [
        [(MAIN, 1), (MAIN, 2)], [(MAIN, 3), (MAIN, 4)], [(MAIN, 5)], [(FAILURES, 1), (FAILURES, 2)],
    ]


@pytest.mark.parametrize("workers", [1, 3])
def test_fan_out_keeps_one_group_beyond_the_runner_slots_in_flight(monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    runner = _Runner()
    monkeypatch.setattr(flows.groups, "build_runner", lambda params: runner)
    monkeypatch.setattr(flows.groups, "Progress", _Progress)
    params = StageParams(rollouts="r", capture_dir="c", output="o", task_runner="thread", max_workers=workers)
    pulled = 0

    def groups() -> Any:
        nonlocal pulled
        for i in range(40):
            pulled += 1
            assert runner.in_flight <= runner_slots(params)  # never read ahead of the window
            yield [_attempt(MAIN, i)]

    seconds, count = fan_out(params, None, groups(), 40, None)
    assert (seconds, count, pulled, runner.in_flight) == (40.0, 40, 40, 0)
    assert runner.most == runner_slots(params) + 1
