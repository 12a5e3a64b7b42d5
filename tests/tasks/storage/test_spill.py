"""Spills: the reduce's on-disk records must come back complete, in order, and (sorted) stably."""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest

from evidence import dumps
from tasks.storage import FileEntry, spill
from tasks.storage.spill import SortedSpill, Spill, count_repeats


def test_spill_reads_back_every_record_each_time() -> None:
    with Spill() as records:
        for i in range(1000):
            records.add({"i": i, "text": "é" * (i % 7)})
        assert records.count == 1000
        assert [r["i"] for r in records] == list(range(1000))
        assert [r["i"] for r in records] == list(range(1000))


@pytest.mark.parametrize("buffer", [1, 3, 64, 10_000])
def test_sorted_spill_equals_a_stable_in_memory_sort(monkeypatch: pytest.MonkeyPatch, buffer: int) -> None:
    """Across any number of on-disk runs: key order, ties in insertion order, wide ints exact."""
    monkeypatch.setattr(spill, "SORT_BUFFER", buffer)
    rng = random.Random(7)
    wide = 2**70
    keys = [(0, 3), (0, wide), (0, wide + 1), (1, "0"), (1, "9")]
    items = [(rng.choice(keys), f"line {i}") for i in range(500)]
    with SortedSpill() as lines:
        for key, text in items:
            lines.add(key, text)
        assert list(lines.items()) == sorted(items, key=lambda item: item[0])


def test_sorted_spill_of_nothing_is_empty() -> None:
    with SortedSpill() as lines:
        assert list(lines.items()) == []


def test_count_repeats_finds_only_keys_seen_more_than_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spill, "SORT_BUFFER", 5)
    keys = ["b", "a", "c", "b", "d", "b", "a"] * 3 + ["e"]
    assert count_repeats(keys, str) == {"a": 6, "b": 9, "c": 3, "d": 3}
    assert count_repeats(["x", "y"], str) == {}


@dataclass(frozen=True, slots=True)
class _Slotted:
    name: str
    entry: FileEntry | None
    size: int = 0


@dataclass(slots=True)
class _Counted:
    """Rebuilt by its constructor, it would count one build too many."""

    builds: int = 0

    def __post_init__(self) -> None:
        self.builds += 1


@dataclass(slots=True)
class _Derived:
    """Rebuilt by its constructor, it would lose ``note`` (set after construction)."""

    value: int
    note: str = field(init=False, default="")


@dataclass(frozen=True, slots=True)
class _KeywordOnly:
    a: int
    b: int = field(kw_only=True)


@dataclass(slots=True)
class _HandWritten:
    """Its own ``__init__`` (which ``dataclass`` keeps) doubles what it is given."""

    a: int

    def __init__(self, doubled: int) -> None:
        self.a = 2 * doubled


@dataclass
class _Open:
    """Without slots, an instance can hold more than its fields."""

    value: int


@pytest.mark.parametrize("batch", [None, 1, 3])
def test_spill_reads_back_records_of_every_kind_equal_and_in_order(batch: int | None) -> None:
    """Slotted dataclasses (rebuilt from their fields) and the kinds that must pickle as usual."""
    derived = _Derived(3)
    derived.note = "set later"
    opened = _Open(1)
    opened.note = "not a field"  # type: ignore[attr-defined]
    records: list[object] = [
        _Slotted("a", FileEntry("a.capture.jsonl", 10, "v1"), 2),
        _Slotted("b", None),
        _Counted(),
        derived,
        _KeywordOnly(1, b=2),
        _HandWritten(5),
        opened,
        {"line": 1, "error": "x"},
        b"manifest line",
        ("key", 2**70),
        None,
    ] * 3
    with Spill(batch) as spilled:
        for record in records:
            spilled.add(record)
        assert list(spilled) == records
        assert [getattr(record, "note", None) for record in spilled if isinstance(record, _Open)] == ["not a field"] * 3


def test_a_read_sees_the_records_added_before_it_began(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spill, "SPILL_BATCH", 4)
    with Spill() as records:
        for i in range(10):
            records.add(i)
        reading = iter(records)
        assert [next(reading), next(reading)] == [0, 1]
        for i in range(10, 25):
            records.add(i)
        assert list(reading) == list(range(2, 10))
        assert list(records) == list(range(25))


def test_a_record_nested_as_deep_as_a_row_parses_is_spilled_and_read_back() -> None:
    """Issue 45: a score digest holding a reward nested 990 levels stopped the pickler (recursion) and failed the run."""
    deep = orjson.loads(b"[" * 1023 + b"0" + b"]" * 1023)  # the deepest value orjson parses from a row
    limit = sys.getrecursionlimit()
    with Spill[Any]() as records:
        for record in ("before", ("digest", {"reward": deep}), "after"):
            records.add(record)
        first, (name, digest), last = list(records)
        records.add("later")  # the file goes on after the batch pickled again
        assert [*list(records)[:1], *list(records)[2:]] == ["before", "after", "later"]
    assert (first, name, last) == ("before", "digest", "after")
    assert dumps(digest) == dumps({"reward": deep})  # compared as text: == recurses too
    assert sys.getrecursionlimit() == limit  # raised for the batch only


def test_a_prefix_reads_the_records_added_before_it_was_taken_however_many_follow() -> None:
    with Spill[int](batch=4) as spill:
        for value in range(6):
            spill.add(value)
        prefix = spill.prefix()  # the half batch is written now
        for value in range(6, 40):
            spill.add(value)
        assert list(prefix) == list(range(6))
        assert list(prefix) == list(range(6))  # read again: the same
        assert list(spill) == list(range(40))
