"""Bounded I/O overlap: read the next few objects ahead, and write the last few behind.

On object stores every request waits tens of milliseconds for its first byte; keeping a few
in flight hides that wait while memory stays bounded by the window.
"""

from __future__ import annotations

import contextlib
import functools
import tempfile
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import BinaryIO, Protocol, Self, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Writable(Protocol):
    """Where ``Documents`` writes (``tasks.storage.Location`` is one: this module sits below it)."""

    def write_bytes(self, data: bytes) -> None: ...

    def write_chunks(self, chunks: Callable[[], Iterable[bytes]]) -> None: ...

    def writer(self) -> AbstractContextManager[BinaryWriter]: ...


class BinaryWriter(Protocol):
    """What a streamed document is written to (a local file, a temporary spool, S3's upload)."""

    def write(self, data: bytes, /) -> object: ...


def ordered_prefetch(
    fn: Callable[[T], R],
    items: Iterable[T],
    *,
    window: int = 16,
    remote: bool = True,
    cost: Callable[[T], int] | None = None,
    budget: int = 0,
) -> Generator[R, None, None]:
    """``map(fn, items)`` in order, with at most ``window`` calls in flight (I/O-bound ``fn``).

    Memory stays bounded by ``window`` results, unlike ``Executor.map`` which submits everything.
    With ``cost`` (e.g. an object's size), calls in flight also stay within ``budget`` in total,
    except that one call is always allowed: large objects are fetched one at a time.

    ``window=0``, or ``remote=False`` (``fn`` reads local files: ``io_window``), makes the
    calls in the caller's thread, one at a time.
    """
    window = io_window(window, remote=remote)
    if window == 0:
        for item in items:
            yield fn(item)
            del item  # as below: the caller may hand the result's contents on
        return
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
            del item  # the last one too: a caller handing its contents on must hold the only reference
        while pending:
            yield pending.popleft()[0].result()


def io_window(window: int, *, remote: bool) -> int:
    """Calls in flight in ``ordered_prefetch`` and ``WriteBehind``: ``window`` on an object store, none for local files.

    A local read or write waits for no network, so a thread gains nothing; it costs the caller
    the GIL. Each time the thread returns from a system call it takes the GIL back, and the
    caller, whose Python work holds it, waits for the thread's turn (up to the interpreter's
    5 ms switch interval) at every I/O call of its own. Measured: the attempt workers spent
    10-15 % more time per attempt with one local reader thread; a 2,000-rollout reduce took
    1.61 s instead of 2.05 s (mean of three runs each, alternately) with its local reads and
    writes made in its own thread, which was then on a core 98 % of the time instead of 47-49 %.
    """
    return window if remote else 0


AT_ONCE = 16
"""Calls in flight together at most (a job of many shards makes three checks per shard)."""


def at_once(calls: Sequence[Callable[[], R]], *, remote: bool) -> list[R]:
    """Each call's result, in order; made concurrently when they wait on a ``remote`` store.

    For the checks a run makes before its first read (does each input exist, what are its size
    and version), and the tables' uploads: on S3 each is a request, and one after another they cost a round trip each
    before any work starts. Locally they wait for nothing, so they run in the caller's thread.
    The first call to raise, in order, raises.
    """
    return list(ordered_prefetch(_call, calls, window=min(len(calls), AT_ONCE), remote=remote))


def _call(call: Callable[[], R]) -> R:
    """``call()``: what ``at_once`` maps over its calls."""
    return call()


class WriteBehind:
    """Writes handed to background threads, at most ``window`` (and ``budget`` bytes) at a time;
    with ``window=0``, or ``remote=False`` (local files: ``io_window``), made at once in the
    caller's thread.

    Used as a context manager: leaving it waits for every write and raises the first failure
    (a write made at once raises from ``submit``), so a group returns only once all its parts
    are stored. One write larger than ``budget`` still goes, alone.
    """

    def __init__(self, *, window: int, budget: int, remote: bool = True) -> None:
        window = io_window(window, remote=remote)
        self._pool = ThreadPoolExecutor(max_workers=window) if window else None
        self._window = window
        self._budget = budget
        self._pending: deque[tuple[Future[None], int]] = deque()
        self._in_flight = 0

    def submit(self, write: Callable[[], None], size: int) -> None:
        if self._pool is None:
            write()
            return
        while self._pending and (len(self._pending) >= self._window or self._in_flight + size > self._budget):
            self._wait_oldest()
        self._pending.append((self._pool.submit(write), size))
        self._in_flight += size

    def _wait_oldest(self) -> None:
        future, size = self._pending.popleft()
        self._in_flight -= size
        future.result()

    def __enter__(self) -> Self:
        return self

    def drain(self) -> None:
        """Wait for every write handed over so far; raise the first failure."""
        while self._pending:
            self._wait_oldest()

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        try:
            if exc_type is None:  # leaving on an error: that error, not a write's, is what propagates
                self.drain()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)


DOCUMENTS_IN_FLIGHT = 8
DOCUMENTS_BUDGET = 64 * 2**20


class Documents(WriteBehind):
    """Whole files written where they go: on an object store behind the caller, locally at once.

    The reduce writes a dozen small documents one after another (the health summary, the perf
    summary, the three score files, the capability matrix); on a bucket each is a round trip
    that waited for the one before (at 100 ms a request, 0.8 s of a 300-rollout run). Leaving
    the block waits for every write and raises the first failure (a local one raises from ``put``).
    """

    def __init__(self, remote: bool) -> None:
        super().__init__(window=DOCUMENTS_IN_FLIGHT, budget=DOCUMENTS_BUDGET, remote=remote)

    def put(self, target: Writable, data: bytes) -> None:
        """Write ``data`` to ``target`` (atomically, as ``write_bytes`` does)."""
        self.submit(functools.partial(target.write_bytes, data), len(data))

    @contextlib.contextmanager
    def stream(self, target: Writable) -> Iterator[BinaryWriter]:
        """A document written as its bytes come, for one too large to hold: locally in place
        (appearing whole when the block ends); on an object store spooled to a local temporary
        file and uploaded behind the caller, as ``put`` would (a retry reads the spool again)."""
        if self._pool is None:
            with target.writer() as out:
                yield out
            return
        with contextlib.ExitStack() as owner:
            spool = owner.enter_context(tempfile.TemporaryFile())
            yield spool
            self.submit(functools.partial(_upload, target, spool), 0)
            owner.pop_all()  # handed over: the upload deletes it


SPOOL_BLOCK = 8 * 2**20


def _upload(target: Writable, spool: BinaryIO) -> None:
    """The spooled document written to ``target``; the spool deleted."""
    with spool:
        target.write_chunks(functools.partial(_spooled, spool))


def _spooled(spool: BinaryIO) -> Iterator[bytes]:
    spool.seek(0)
    while block := spool.read(SPOOL_BLOCK):
        yield block
