"""A table's rows land in the same row groups, and the same file bytes, however they are handed over."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow.parquet as pq

from evidence.tables import TABLES
from tasks.tables.parquet import TableWriter


def _rows(count: int) -> list[tuple[object, ...]]:
    return [("j", "r", f"main:{n}", "main", "capture", n, f"code-{n % 3}", n % 2 == 0, None, "d" * (n % 5)) for n in range(count)]


def test_rows_handed_in_batches_make_the_row_groups_of_rows_added_one_by_one() -> None:
    rows = _rows(41)
    one_by_one, batched = TableWriter(TABLES["gaps"], 3), TableWriter(TABLES["gaps"], 3)
    for row in rows:
        one_by_one.add(row)
    batches, rest = random.Random(7), list(rows)
    while rest:
        size = batches.choice([0, 1, 2, 3, 5, 7])  # under, at and over a row group, and nothing
        batched.extend(rest[:size])
        del rest[:size]
    assert one_by_one.finish() == batched.finish() == 41
    groups = [pq.ParquetFile(writer.path).metadata for writer in (one_by_one, batched)]
    assert [groups[1].row_group(i).num_rows for i in range(groups[1].num_row_groups)] == [3] * 13 + [2]
    assert Path(one_by_one.path).read_bytes() == Path(batched.path).read_bytes()
    for writer in (one_by_one, batched):
        writer.discard()
