"""A local file written behind its writer, in order, by a thread of its own; its bytes start for disk as they come.

Part of ``tasks.storage``: the local side of ``atomic_writer`` writes its temp file through
``LocalFile``. Two measured costs of plain buffered writes, at 10,000 rollouts:

- The kernel's copy of each row into the page cache (0.4–1 GB/s on this class of machine) is
  the reduce's biggest cost, and the reduce sat in ``write()`` for 60 % of its time. Here the
  copy runs on the writer thread (``os.write`` releases the interpreter lock) while the caller
  decodes the next parts; at most ``BEHIND_BYTES`` wait to be written.
- The kernel writes dirty pages back only once they pile up to its threshold (10 % of memory)
  and then makes every writer wait at disk speed: the fan-out's segments filled it, and the
  reduce's ``rollouts.jsonl`` went at a third of the disk's speed. ``sync_file_range(2)``
  starts writeback of each ``WRITEBACK_BYTES`` as it is written, without waiting for it, so
  the disk works all along and the page cache (the reduce reads segments from it) stays.
  Durability is unchanged: nothing waits for the disk.
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Callable

from tasks.prefetch import WriteBehind

BATCH_BYTES = 1 * 2**20
"""Pieces are handed to the writer thread in batches of about this many bytes."""
BEHIND_BYTES = 64 * 2**20
"""At most this many bytes handed over and not yet written (one larger piece goes alone)."""
WRITEBACK_BYTES = 32 * 2**20
"""Writeback of the file is started every this many bytes, and at its end."""
_SYNC_FILE_RANGE_WRITE = 2  # <linux/fs.h>: start writeback of the range's dirty pages, do not wait


@functools.cache
def _sync_file_range() -> Callable[[int, int, int, int], int] | None:
    """Linux's ``sync_file_range(2)`` from the C library, or None where there is none."""
    try:
        call = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (AttributeError, OSError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    return call


class LocalFile:
    """Writes to an open file descriptor (closed on exit); leaving without error waits for every byte.

    A file shorter than one batch is written on leaving, by the caller's thread (no thread is
    started for the many small outputs).

    A piece must not change once handed to ``write``: bytes and read-only views are kept as
    they are, anything mutable is copied.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._behind = WriteBehind(window=BEHIND_BYTES // BATCH_BYTES, budget=BEHIND_BYTES, threads=1)
        self._batch: list[bytes | memoryview] = []
        self._batch_bytes = 0
        self._handed_over = False
        self._written = 0  # the writer thread's: bytes in the file, and where writeback was last started
        self._started = 0

    def write(self, data: bytes | memoryview) -> int:
        if not isinstance(data, bytes) and not (isinstance(data, memoryview) and data.readonly):
            data = bytes(data)
        self._batch.append(data)
        self._batch_bytes += len(data)
        if self._batch_bytes >= BATCH_BYTES:
            self._hand_over()
        return len(data)

    def _hand_over(self) -> None:
        batch, self._batch = self._batch, []
        self._behind.submit(functools.partial(self._write_batch, batch), self._batch_bytes)
        self._batch_bytes = 0
        self._handed_over = True

    def _write_batch(self, batch: list[bytes | memoryview]) -> None:
        for piece in batch:
            view = memoryview(piece)
            while view:
                view = view[os.write(self._fd, view) :]
            self._written += len(piece)
        if self._written - self._started >= WRITEBACK_BYTES:
            self._start_writeback()

    def _start_writeback(self) -> None:
        call = _sync_file_range()
        if call is not None and self._written > self._started:
            call(self._fd, self._started, self._written - self._started, _SYNC_FILE_RANGE_WRITE)  # advice: its errors change nothing
        self._started = self._written

    def __enter__(self) -> LocalFile:
        self._behind.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        try:
            if exc_type is None and not self._handed_over:  # a file under one batch: no thread for it
                self._write_batch(self._batch)
                self._start_writeback()
            elif exc_type is None:
                self._hand_over()
                self._behind.submit(self._start_writeback, 0)
            self._behind.__exit__(exc_type, *rest)  # waits for every write; raises the first failure
        finally:
            os.close(self._fd)
