"""A local file written behind its writer, in order, by a thread of its own.

Part of ``tasks.storage``: the local side of ``atomic_writer`` writes its temp file through
``LocalFile``. The kernel's copy of each row into the page cache (0.3–1.5 GB/s on this class of
machine, varying by the minute) is the reduce's biggest cost: at 10,000 rollouts the reduce
sat in ``write()`` for 60 % of its time. Here the copy runs on the writer thread (``os.write``
releases the interpreter lock) while the caller decodes the next parts; at most
``BEHIND_BYTES`` wait to be written.
"""

from __future__ import annotations

import functools
import os

from tasks.prefetch import WriteBehind

BATCH_BYTES = 1 * 2**20
"""Pieces are handed to the writer thread in batches of about this many bytes."""
BEHIND_BYTES = 64 * 2**20
"""At most this many bytes handed over and not yet written (one larger piece goes alone)."""


class LocalFile:
    """Writes to an open file descriptor (closed on exit); leaving without error waits for every byte.

    A file shorter than one batch is written on leaving, by the caller's thread (no thread is
    started for the many small outputs). A piece must not change once handed to ``write``:
    bytes and read-only views are kept as they are, anything mutable is copied.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._behind = WriteBehind(window=BEHIND_BYTES // BATCH_BYTES, budget=BEHIND_BYTES, threads=1)
        self._batch: list[bytes | memoryview] = []
        self._batch_bytes = 0
        self._handed_over = False

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

    def __enter__(self) -> LocalFile:
        self._behind.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        try:
            if exc_type is None and not self._handed_over:  # a file under one batch: no thread for it
                self._write_batch(self._batch)
            elif exc_type is None:
                self._hand_over()
            self._behind.__exit__(exc_type, *rest)  # waits for every write; raises the first failure
        finally:
            os.close(self._fd)
