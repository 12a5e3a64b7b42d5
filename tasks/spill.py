"""Local temporary files that let the flow hold per-attempt records on disk, not in memory.

A run keeps one small record per attempt in several places: the job plan (one reference per
attempt, one entry per input file) and the reduce's folds (health digests, perf records,
capability digests, ATIF decisions, manifest entries). Held in memory they grow with the job;
spilled here, memory stays bounded by a fold's own state and one sort buffer (DESIGN.md
invariant 6).
"""

from __future__ import annotations

import heapq
import pickle
import tempfile
from collections.abc import Iterator
from typing import IO, Any, Generic, Self, TypeVar

SORT_BUFFER = 4096
T = TypeVar("T")


class TemporaryStore:
    """Something holding local temporary files: a context manager that deletes them on exit."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Spill(TemporaryStore, Generic[T]):
    """An append-only temporary file of picklable records, read back as a stream any number of times.

    Each read opens its own handle, so reads may overlap each other and later appends.
    """

    def __init__(self) -> None:
        self._file: IO[bytes] = tempfile.NamedTemporaryFile(prefix="evidence-stage-spill-")
        self.count = 0

    def add(self, record: T) -> None:
        pickle.dump(record, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        self.count += 1

    def __iter__(self) -> Iterator[T]:
        self._file.flush()
        return _records(self._file.name, self.count)

    def close(self) -> None:
        self._file.close()


def _records(path: str, count: int) -> Iterator[Any]:
    with open(path, "rb") as file:
        for _ in range(count):
            yield pickle.load(file)


class SortedSpill(TemporaryStore):
    """A stable external sort of ``(key, text)`` pairs: sorted runs of ``SORT_BUFFER`` on disk, merged.

    Keys are any picklable, mutually comparable values (tuples, ints wider than 64 bits); equal
    keys keep their insertion order, as ``sorted`` does.
    """

    def __init__(self) -> None:
        self._buffer: list[tuple[Any, str]] = []
        self._runs: list[Spill[tuple[Any, str]]] = []

    def add(self, key: Any, text: str) -> None:
        self._buffer.append((key, text))
        if len(self._buffer) >= SORT_BUFFER:
            self._flush()

    def _flush(self) -> None:
        run: Spill[tuple[Any, str]] = Spill()
        for item in sorted(self._buffer, key=_key):
            run.add(item)
        self._runs.append(run)
        self._buffer = []

    def texts(self) -> Iterator[str]:
        """Every text, in key order."""
        if self._buffer:
            self._flush()
        for _, text in heapq.merge(*self._runs, key=_key):
            yield text

    def close(self) -> None:
        for run in self._runs:
            run.close()


def _key(item: tuple[Any, str]) -> Any:
    return item[0]
