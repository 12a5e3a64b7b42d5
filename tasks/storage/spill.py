"""Local temporary files that let the flow hold per-attempt records on disk, not in memory.

A run keeps one small record per attempt in several places: the job plan (one reference per
attempt, one entry per input file) and the reduce's folds (health digests, perf records,
capability digests, ATIF decisions, manifest entries). Held in memory they grow with the job;
spilled here, memory stays bounded by a fold's own state and one sort buffer (README,
guarantee 6).
"""

from __future__ import annotations

import dataclasses
import heapq
import inspect
import itertools
import operator
import pickle
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, Generic, Self, TypeVar

from evidence import deep_recursion

SORT_BUFFER = 4096
SPILL_BATCH = 16
"""Records a spill holds in memory before it pickles them to disk, as one list: one pickling
call per batch, not per record, and a class named once per batch. With the dataclass reducer
below, a record's round trip costs about a third of what one ``pickle.dump`` and ``load`` per
record did (``AttemptRef`` and manifest entries: 3.7-6.0 us against 11.9-16.6 us). Small, because
the flow's peak is in the reduce, where several spills fill at once and every sorted run is
read at once: batches of 256 raised the peak at 20,000 attempts by ~1.5 MiB, of 16 by ~0.5."""
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

    Records are written in batches of ``batch`` (``SPILL_BATCH``; 1 for records that may be
    large, such as held ATIF files), so a record must not change once added, and one that
    cannot be pickled raises when its batch is written. Each read opens its own handle, so
    reads may overlap each other and later appends.
    """

    def __init__(self, batch: int | None = None) -> None:
        self._file = tempfile.NamedTemporaryFile(prefix="evidence-stage-spill-")  # noqa: SIM115  # open for the spill's life: close()
        # The wrapper's attribute access builds a new function on every call; the file it wraps does not.
        self._raw: IO[bytes] = self._file.file
        self._batch_size = SPILL_BATCH if batch is None else batch
        self._batch: list[T] = []
        self.count = 0

    def add(self, record: T) -> None:
        self._batch.append(record)
        self.count += 1
        if len(self._batch) >= self._batch_size:
            self._write_batch()

    def _write_batch(self) -> None:
        if self._batch:
            start = self._raw.tell()
            try:
                _Pickler(self._raw, protocol=pickle.HIGHEST_PROTOCOL).dump(self._batch)
            except RecursionError:  # a value read from a row, nested deeper than the pickler's default allows
                self._raw.seek(start)
                self._raw.truncate()
                with deep_recursion():
                    _Pickler(self._raw, protocol=pickle.HIGHEST_PROTOCOL).dump(self._batch)
            self._batch = []

    def __iter__(self) -> Iterator[T]:
        self._write_batch()
        self._file.flush()
        return _records(self._file.name, self.count)

    def prefix(self) -> Iterable[T]:
        """The records added so far, to read back later without those added meanwhile: a view another
        thread can read while this one goes on adding (a followed job's snapshot of the reduce's folds)."""
        self._write_batch()
        self._file.flush()
        return _Prefix(self._file.name, self.count)

    def close(self) -> None:
        self._batch = []
        self._file.close()


@dataclasses.dataclass(frozen=True, slots=True)
class _Prefix(Generic[T]):
    """The first ``count`` records of a spill's file (``Spill.prefix``)."""

    path: str
    count: int

    def __iter__(self) -> Iterator[T]:
        return _records(self.path, self.count)


def _records(path: str, count: int) -> Iterator[Any]:
    """The first ``count`` records: whole batches, since a read starts after a batch is written."""
    with open(path, "rb") as file:
        while count > 0:
            batch = pickle.load(file)
            count -= len(batch)
            yield from batch


class _Pickler(pickle.Pickler):
    """Pickles a dataclass as its class and field values, rebuilt by calling the class.

    Slotted dataclasses otherwise pickle through ``dataclasses``' own Python ``__getstate__`` and
    ``__setstate__``, which look the fields up again for every record: five times the cost of
    this. Only a class its constructor rebuilds exactly takes this path (``_field_getter``);
    any other object pickles as usual.
    """

    def reducer_override(self, obj: Any) -> Any:
        fields = _field_getter(type(obj))
        return NotImplemented if fields is None else (type(obj), fields(obj))


_GETTERS: dict[type, Callable[[Any], tuple[Any, ...]] | None] = {}


def _field_getter(cls: type) -> Callable[[Any], tuple[Any, ...]] | None:
    """A function giving an instance's field values in ``__init__`` order, or None for a class
    its constructor might not rebuild: one that is not a dataclass with slots of its own
    (without them an instance can hold more than its fields), one whose ``__init__`` does
    not take exactly its fields, in order (keyword-only or non-init fields, ``InitVar``, a
    hand-written one with other arguments), or one with a ``__post_init__``."""
    try:
        return _GETTERS[cls]
    except KeyError:
        pass
    getter = None
    if dataclasses.is_dataclass(cls) and "__slots__" in cls.__dict__:
        names = [field.name for field in dataclasses.fields(cls)]
        arguments = list(inspect.signature(cls.__init__).parameters.values())[1:]
        positional = all(argument.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for argument in arguments)
        if names and positional and [argument.name for argument in arguments] == names and not hasattr(cls, "__post_init__"):
            getter = operator.attrgetter(*names) if len(names) > 1 else _one(names[0])
    _GETTERS[cls] = getter
    return getter


def _one(name: str) -> Callable[[Any], tuple[Any, ...]]:
    """``attrgetter`` of one name gives the value itself, not a one-value tuple."""
    get = operator.attrgetter(name)
    return lambda obj: (get(obj),)


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
            count = 1 + sum(1 for _ in run)  # noqa: B031  # the same group, read on: its first, then the rest
            if count > 1:
                repeats[first] = count
    return repeats


def _key(item: tuple[Any, Any]) -> Any:
    return item[0]
