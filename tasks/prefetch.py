"""Ordered, bounded read-ahead: fetch the next few objects while the current one is consumed."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def ordered_prefetch(fn: Callable[[T], R], items: Iterable[T], *, window: int = 16) -> Iterator[R]:
    """``map(fn, items)`` in order, with at most ``window`` calls in flight (I/O-bound ``fn``).

    Memory stays bounded by ``window`` results, unlike ``Executor.map`` which submits everything.
    """
    with ThreadPoolExecutor(max_workers=window) as pool:
        pending: deque[Future[R]] = deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= window:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
