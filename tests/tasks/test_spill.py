"""Spills: the reduce's on-disk records must come back complete, in order, and (sorted) stably."""

from __future__ import annotations

import random

import pytest

from tasks import spill
from tasks.spill import SortedSpill, Spill, count_repeats


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
