"""The frontier the reduce follows: waits for the fan-out, never passes it, and ends when it stops."""

from __future__ import annotations

import threading
import time

import pytest

import tasks.reduce
from tasks.discover import FAILURES, MAIN, AttemptRef
from tasks.frontier import FanOutStopped, Frontier


def test_waiting_returns_once_the_attempt_is_ready_with_how_many_are() -> None:
    frontier = Frontier()
    seen: list[int] = []
    waiter = threading.Thread(target=lambda: seen.append(frontier.wait_beyond(4)))
    waiter.start()
    frontier.advance(3)
    time.sleep(0.05)
    assert seen == []  # attempts 0-2 ready: attempt 4 is not
    frontier.advance(5)
    waiter.join(5)
    assert seen == [8]
    assert frontier.wait_beyond(7) == 8


def test_a_stopped_frontier_still_serves_what_is_ready_and_refuses_the_rest() -> None:
    frontier = Frontier()
    frontier.advance(2)
    frontier.stop()
    assert frontier.wait_beyond(1) == 2
    with pytest.raises(FanOutStopped, match="after 2 attempts"):
        frontier.wait_beyond(2)


def test_stopping_wakes_a_waiter() -> None:
    frontier = Frontier()
    raised: list[BaseException] = []

    def wait() -> None:
        try:
            frontier.wait_beyond(0)
        except FanOutStopped as exc:
            raised.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.05)
    frontier.stop()
    waiter.join(5)
    assert not waiter.is_alive() and len(raised) == 1


def _attempt(source: str, line: int) -> AttemptRef:
    return AttemptRef(source, line, 0, 1, line, None, None, False, "")


def test_the_reduce_takes_each_run_of_parts_only_once_it_is_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs end at the frontier, at a folder change and at READY_RUN_ATTEMPTS; none reaches past what is ready."""
    monkeypatch.setattr(tasks.reduce, "READY_RUN_ATTEMPTS", 3)
    plan = [_attempt(MAIN, line) for line in range(1, 8)] + [_attempt(FAILURES, line) for line in range(1, 3)]
    frontier = Frontier()
    frontier.advance(2)
    runs = tasks.reduce._ready_runs(enumerate(plan), frontier)
    assert [(a.source, a.line) for a in next(runs)] == [(MAIN, 1), (MAIN, 2)]
    frontier.advance(7)
    frontier.stop()
    assert [[(a.source, a.line) for a in run] for run in runs] == [
        [(MAIN, 3), (MAIN, 4), (MAIN, 5)], [(MAIN, 6), (MAIN, 7)], [(FAILURES, 1), (FAILURES, 2)],
    ]


def test_the_reduce_stops_at_a_stopped_frontier() -> None:
    frontier = Frontier()
    frontier.advance(1)
    frontier.stop()
    runs = tasks.reduce._ready_runs(enumerate([_attempt(MAIN, 1), _attempt(MAIN, 2)]), frontier)
    assert [a.line for a in next(runs)] == [1]
    with pytest.raises(FanOutStopped):
        next(runs)
