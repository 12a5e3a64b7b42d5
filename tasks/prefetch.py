"""Ordered, bounded read-ahead: fetch the next few objects while the current one is consumed."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def ordered_prefetch(
    fn: Callable[[T], R],
    items: Iterable[T],
    *,
    window: int = 16,
    cost: Callable[[T], int] | None = None,
    budget: int = 0,
) -> Iterator[R]:
    """``map(fn, items)`` in order, with at most ``window`` calls in flight (I/O-bound ``fn``).

    Memory stays bounded by ``window`` results, unlike ``Executor.map`` which submits everything.
    With ``cost`` (e.g. an object's size), calls in flight also stay within ``budget`` in total,
    except that one call is always allowed: large objects are fetched one at a time.
    """
    with ThreadPoolExecutor(max_workers=window) as pool:
        pending: deque[tuple[Future[R], int]] = deque()
        in_flight = 0
        for item in items:
            weight = cost(item) if cost is not None else 0
            while pending and (len(pending) >= window or (cost is not None and in_flight + weight > budget)):
                future, done = pending.popleft()
                in_flight -= done
                yield future.result()
            pending.append((pool.submit(fn, item), weight))
            in_flight += weight
        while pending:
            yield pending.popleft()[0].result()
