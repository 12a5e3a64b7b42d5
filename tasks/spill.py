"""Local temporary files that let the flow hold per-attempt records on disk, not in memory.

A run keeps one small record per attempt in several places: the job plan (one reference per
attempt, one entry per input file) and the reduce's folds (health digests, perf records,
capability digests, ATIF decisions, manifest entries). Held in memory they grow with the job;
spilled here, memory stays bounded by a fold's own state and one sort buffer (DESIGN.md
invariant 6).
"""

from __future__ import annotations

import heapq
import itertools
import pickle
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, Generic, Self, TypeVar

SORT_BUFFER = 4096
T = TypeVar("T")
K = TypeVar("K")


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
        self._file = tempfile.NamedTemporaryFile(prefix="evidence-stage-spill-")
        # The wrapper's attribute access builds a new function on every call; the file it wraps does not.
        self._raw: IO[bytes] = self._file.file
        self.count = 0

    def add(self, record: T) -> None:
        pickle.dump(record, self._raw, protocol=pickle.HIGHEST_PROTOCOL)
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


class SortedSpill(TemporaryStore, Generic[T]):
    """A stable external sort of ``(key, value)`` pairs: sorted runs of ``SORT_BUFFER`` on disk, merged.

    Keys are any picklable, mutually comparable values (tuples, ints wider than 64 bits); equal
    keys keep their insertion order, as ``sorted`` does.
    """

    def __init__(self) -> None:
        self._buffer: list[tuple[Any, T]] = []
        self._runs: list[Spill[tuple[Any, T]]] = []

    def add(self, key: Any, value: T) -> None:
        self._buffer.append((key, value))
        if len(self._buffer) >= SORT_BUFFER:
            self._flush()

    def _flush(self) -> None:
        run: Spill[tuple[Any, T]] = Spill()
        for item in sorted(self._buffer, key=_key):
            run.add(item)
        self._runs.append(run)
        self._buffer = []

    def items(self) -> Iterator[tuple[Any, T]]:
        """Every pair, in key order."""
        if self._buffer:
            self._flush()
        return heapq.merge(*self._runs, key=_key)

    def close(self) -> None:
        for run in self._runs:
            run.close()


def count_repeats(keys: Iterable[K], order: Callable[[K], Any]) -> dict[K, int]:
    """The keys that occur more than once, with their counts, found by an external sort.

    ``order`` maps a key to a sortable value that is equal exactly when the keys are equal.
    Memory holds one sort buffer and the repeats, not a counter of every key.
    """
    repeats: dict[K, int] = {}
    with SortedSpill[K]() as spill:
        for key in keys:
            spill.add(order(key), key)
        for _, run in itertools.groupby(spill.items(), key=_key):
            first = next(run)[1]
            count = 1 + sum(1 for _ in run)
            if count > 1:
                repeats[first] = count
    return repeats


def _key(item: tuple[Any, Any]) -> Any:
    return item[0]
