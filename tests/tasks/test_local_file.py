"""Local atomic writes through ``LocalFile``: bytes in order from a writer thread, failures kept."""

from __future__ import annotations

import errno
import os
import random
import threading
from pathlib import Path

import pytest

import tasks.storage.local_file as local_file
from tasks.storage import Location, atomic_writer


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of 1 KiB, at most 4 KiB behind: a short file crosses both."""
    monkeypatch.setattr(local_file, "BATCH_BYTES", 1024)
    monkeypatch.setattr(local_file, "BEHIND_BYTES", 4096)


def _pieces(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(rng.choice([0, 1, 10, 700, 1500, 5000])) for _ in range(200)]


@pytest.mark.parametrize("seed", range(5))
def test_file_is_the_pieces_in_order_whatever_their_kind(tmp_path: Path, small_batches: None, seed: int) -> None:
    """bytes, read-only views (the reduce's rows from mapped segments) and mutable buffers reused by the caller."""
    pieces = _pieces(seed)
    scratch = bytearray()
    with atomic_writer(Location(str(tmp_path / "out.jsonl"))) as out:
        for i, piece in enumerate(pieces):
            if i % 3 == 0:
                out.write(piece)
            elif i % 3 == 1:
                out.write(memoryview(piece).toreadonly())
            else:
                scratch[:] = piece
                out.write(scratch)
                scratch[:] = b"\xff" * len(piece)  # the caller reuses its buffer at once
    assert (tmp_path / "out.jsonl").read_bytes() == b"".join(pieces)


def test_a_failed_write_in_the_writer_thread_raises_and_publishes_nothing(tmp_path: Path, small_batches: None, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write, calls = os.write, []

    def disk_full_after_a_while(fd: int, data: memoryview) -> int:
        calls.append(threading.current_thread())
        if len(calls) > 20:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(local_file.os, "write", disk_full_after_a_while)
    target = tmp_path / "out.jsonl"
    with pytest.raises(OSError, match="No space left"):
        with atomic_writer(Location(str(target))) as out:
            for piece in _pieces(3):
                out.write(piece)
    assert not target.exists()
    assert os.listdir(tmp_path) == []
    assert threading.main_thread() not in calls


def test_a_file_under_one_batch_is_written_by_the_callers_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The many small outputs (ATIF files, summaries) start no thread."""
    real_write, writers = os.write, set()

    def recorded(fd: int, data: memoryview) -> int:
        writers.add(threading.current_thread())
        return real_write(fd, data)

    monkeypatch.setattr(local_file.os, "write", recorded)
    with atomic_writer(Location(str(tmp_path / "small.json"))) as out:
        out.write(b"{}")
        out.write(b"\n")
    assert writers == {threading.current_thread()}
    assert (tmp_path / "small.json").read_bytes() == b"{}\n"
