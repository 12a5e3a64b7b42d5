"""Local temporary files that let the reduce hold per-attempt records on disk, not in memory.

A run's reduce sees one small record per attempt for each of its folds (health digests, perf
records, capability digests, ATIF decisions). Held in memory they grow with the job; spilled
here, the reduce's memory stays bounded by a fold's own state and one sort buffer
(DESIGN.md invariant 6).
"""

from __future__ import annotations

import heapq
import pickle
import tempfile
from collections.abc import Iterator
from typing import IO, Any, Self

import orjson

SORT_BUFFER = 4096


class TemporaryStore:
    """Something holding local temporary files: a context manager that deletes them on exit."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Spill(TemporaryStore):
    """An append-only temporary JSONL file of small records, read back (any number of times) as a stream."""

    def __init__(self) -> None:
        self._file: IO[bytes] = tempfile.TemporaryFile()
        self.count = 0

    def add(self, record: Any) -> None:
        self._file.write(orjson.dumps(record) + b"\n")
        self.count += 1

    def __iter__(self) -> Iterator[Any]:
        self._file.seek(0)
        return (orjson.loads(line) for line in self._file)

    def close(self) -> None:
        self._file.close()


class SortedSpill(TemporaryStore):
    """A stable external sort of ``(key, text)`` pairs: sorted runs of ``SORT_BUFFER`` on disk, merged.

    Keys are any picklable, mutually comparable values (tuples, ints wider than 64 bits); equal
    keys keep their insertion order, as ``sorted`` does.
    """

    def __init__(self) -> None:
        self._buffer: list[tuple[Any, str]] = []
        self._runs: list[IO[bytes]] = []

    def add(self, key: Any, text: str) -> None:
        self._buffer.append((key, text))
        if len(self._buffer) >= SORT_BUFFER:
            self._flush()

    def _flush(self) -> None:
        run = tempfile.TemporaryFile()
        for item in sorted(self._buffer, key=_key):
            pickle.dump(item, run, protocol=pickle.HIGHEST_PROTOCOL)
        self._runs.append(run)
        self._buffer = []

    def texts(self) -> Iterator[str]:
        """Every text, in key order."""
        if self._buffer:
            self._flush()
        for _, text in heapq.merge(*(_read_run(run) for run in self._runs), key=_key):
            yield text

    def close(self) -> None:
        for run in self._runs:
            run.close()


def _key(item: tuple[Any, str]) -> Any:
    return item[0]


def _read_run(run: IO[bytes]) -> Iterator[tuple[Any, str]]:
    run.seek(0)
    while True:
        try:
            yield pickle.load(run)
        except EOFError:
            return
