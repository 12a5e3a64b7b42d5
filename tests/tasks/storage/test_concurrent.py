"""Read-ahead: in order, bounded; with no window, in the caller's thread one item at a time.
Checks at once, documents and writes behind: concurrent on a remote store, in the caller's thread locally."""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Callable, Iterable, Iterator

import pytest

from tasks.storage.concurrent import Documents, WriteBehind, at_once, io_window, ordered_prefetch


@pytest.mark.parametrize("window", [0, 1, 3])
def test_results_come_in_input_order(window: int) -> None:
    assert list(ordered_prefetch(lambda n: n * n, range(10), window=window)) == [n * n for n in range(10)]


def test_no_window_calls_in_the_callers_thread_only_when_the_next_result_is_wanted() -> None:
    calls: list[tuple[int, threading.Thread]] = []

    def fetch(n: int) -> int:
        calls.append((n, threading.current_thread()))
        return n

    results = ordered_prefetch(fetch, range(3), window=0)
    assert next(results) == 0
    assert [n for n, _ in calls] == [0]
    assert list(results) == [1, 2]
    assert {thread for _, thread in calls} == {threading.current_thread()}


def test_a_window_keeps_at_most_that_many_calls_ahead() -> None:
    started: list[int] = []
    results = ordered_prefetch(lambda n: started.append(n) or n, range(10), window=3)
    assert next(results) == 0
    assert len(started) <= 4  # the one returned and at most three in flight behind it
    assert list(results) == list(range(1, 10))


def test_remote_checks_are_all_in_flight_at_once_and_answer_in_order() -> None:
    barrier = threading.Barrier(4, timeout=10)  # broken (and raising) unless all four wait together

    def check(n: int) -> int:
        barrier.wait()
        return n

    assert at_once([lambda n=n: check(n) for n in range(4)], remote=True) == [0, 1, 2, 3]


def test_local_checks_run_in_the_callers_thread_and_the_first_failure_raises() -> None:
    threads: list[threading.Thread] = []

    def check(n: int) -> int:
        threads.append(threading.current_thread())
        if n == 1:
            raise FileNotFoundError(n)
        return n

    with pytest.raises(FileNotFoundError):
        at_once([lambda n=n: check(n) for n in range(3)], remote=False)
    assert threads == [threading.current_thread()] * 2  # stopped at the failure


class _Target:
    """A document's destination that records which thread wrote it, and can be told to fail."""

    def __init__(self, fails: bool = False) -> None:
        self.data: bytes | None = None
        self.thread: int | None = None
        self.fails = fails

    def write_bytes(self, data: bytes) -> None:
        if self.fails:
            raise OSError("the bucket said no")
        self.data, self.thread = data, threading.get_ident()

    def write_chunks(self, chunks: Callable[[], Iterable[bytes]]) -> None:
        """As a store that retries: ``chunks()`` read twice, the second time kept."""
        first = b"".join(chunks())
        self.write_bytes(b"".join(chunks()))
        assert self.data == first

    @contextlib.contextmanager
    def writer(self) -> Iterator[io.BytesIO]:
        out = io.BytesIO()
        yield out
        self.write_bytes(out.getvalue())


def test_local_documents_are_written_in_place() -> None:
    target = _Target()
    with Documents(remote=False) as documents:
        documents.put(target, b"x")
        assert target.data == b"x"
    assert target.thread == threading.get_ident()


def test_remote_documents_are_written_behind_and_all_written_on_leaving() -> None:
    targets = [_Target() for _ in range(20)]
    with Documents(remote=True) as documents:
        for k, target in enumerate(targets):
            documents.put(target, bytes([k]))
    assert [t.data for t in targets] == [bytes([k]) for k in range(20)]
    assert threading.get_ident() not in {t.thread for t in targets}


def test_a_failed_remote_document_raises_on_leaving() -> None:
    with pytest.raises(OSError, match="the bucket said no"), Documents(remote=True) as documents:
        documents.put(_Target(fails=True), b"x")


def test_a_local_streamed_document_is_written_in_place_as_it_comes() -> None:
    target = _Target()
    with Documents(remote=False) as documents:
        with documents.stream(target) as out:
            out.write(b"a")
            out.write(b"b")
        assert target.data == b"ab"
    assert target.thread == threading.get_ident()


def test_a_remote_streamed_document_is_spooled_and_uploaded_behind() -> None:
    targets = [_Target() for _ in range(3)]
    with Documents(remote=True) as documents:
        for k, target in enumerate(targets):
            with documents.stream(target) as out:
                for _ in range(k + 1):
                    out.write(bytes([k]) * 5)
    assert [t.data for t in targets] == [bytes([k]) * 5 * (k + 1) for k in range(3)]
    assert threading.get_ident() not in {t.thread for t in targets}


def _half_written(documents: Documents, target: _Target) -> None:
    with documents.stream(target) as out:
        out.write(b"half")
        raise ValueError("made no more")


@pytest.mark.parametrize("remote", [False, True])
def test_a_streamed_document_whose_block_fails_is_not_written(remote: bool) -> None:
    target = _Target()
    with pytest.raises(ValueError, match="made no more"), Documents(remote=remote) as documents:
        _half_written(documents, target)
    assert target.data is None


def test_local_io_has_no_window_and_remote_io_keeps_its_own() -> None:
    assert io_window(8, remote=False) == 0
    assert io_window(8, remote=True) == 8


def test_writes_behind_with_no_window_are_made_at_once_in_the_callers_thread() -> None:
    targets = [_Target() for _ in range(3)]
    with WriteBehind(window=0, budget=1) as writes:
        for k, target in enumerate(targets):
            writes.submit(lambda target=target, k=k: target.write_bytes(bytes([k])), 10)
            assert target.data == bytes([k])  # written before submit returned, budget or not
    assert {t.thread for t in targets} == {threading.get_ident()}


def test_a_failed_write_with_no_window_raises_where_it_is_submitted() -> None:
    with WriteBehind(window=0, budget=1) as writes, pytest.raises(OSError, match="the bucket said no"):
        writes.submit(lambda: _Target(fails=True).write_bytes(b"x"), 1)
