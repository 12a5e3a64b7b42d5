"""``<stat>/<col>`` statistics per task (or per agent), as 0.7.0's ``groupby.apply`` computes them.

0.7.0 describes each task's frame with five DataFrame reductions (mean, max, min, median,
sample std), draws a 64-bin W&B histogram of every column (thrown away, but numpy raises when
a range is too narrow for its magnitude) and, in a frame where every std is NaN (one row),
reads 0 for the complete columns. Its frames hold one column per pandas block (pandas 3
splits blocks when columns are dropped), so every reduction is pandas' ``nanops`` function on
one column's ``(1, rows)`` array, and the median takes pandas' one-row path (numpy's 1-d
``nanmedian``: the mean of the middle one or two values).

That is thousands of small pandas calls per group. :func:`describe_groups` gets the same
floats with a few: the groups of one size are stacked into one ``(groups, size)`` array per
column and reduced along its rows by the same ``nanops`` functions (each row reduced on its
own, as in a ``(1, size)`` block); the median is the mean of the middle values, picked from
the sorted rows. A result table whose columns are all integers keeps int ``max``/``min``
(pandas casts a mixed int/float result to float). Columns that are not int/uint/float (wide
integers make object columns) are described frame by frame with pandas itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = ["HISTOGRAM_BINS", "bins_certainly_fit", "describe_groups", "middle_means", "plain", "stacked_groups"]

HISTOGRAM_BINS = 64
STATS = ("mean", "max", "min", "median", "std")


def describe_groups(table: pd.DataFrame, key: str, columns: Sequence[str]) -> Iterator[tuple[Any, dict[str, Any]]]:
    """``(group key, statistics)`` per group of ``table`` by ``key``, in sorted key order
    (a NaN key is dropped, as groupby does), over ``columns``; keys are stat-major.

    Everything that can raise (0.7.0's reductions and histograms) is done before this returns;
    each group's statistics are then made as the iterator reaches it, so a group of many tasks
    never holds every task's dict at once (its aggregate-metrics entries are written one by one).
    """
    import numpy as np

    if not all(isinstance(table[c].dtype, np.dtype) and table[c].dtype.kind in "iuf" for c in columns):
        frame = table.drop(columns=[c for c in table.columns if c != key and c not in columns])
        return iter([(plain(group), _describe_frame(rows.drop(columns=key))) for group, rows in frame.groupby(key)])
    grouped = table.groupby(key)
    sizes = grouped.size()
    batches = stacked_groups(grouped.ngroup().to_numpy(dtype=np.float64), len(sizes))
    per_column = []
    for column in columns:
        data = table[column].to_numpy()
        results = {stat: np.empty(len(sizes), dtype=object) for stat in (*STATS, "complete")}
        for groups, rows in batches:
            for stat, values in _reduce_rows(data[rows]).items():
                results[stat][groups] = list(values)
        per_column.append(results)
    # pandas casts the reduced columns to their common type: int64 or uint64 alone stay integers
    integral = {table[c].dtype.kind for c in columns} in ({"i"}, {"u"})
    names = [[f"{stat}/{column}" for column in columns] for stat in STATS]  # one key object for every group's entry
    return ((group, _group_stats(index, names, per_column, integral)) for index, group in enumerate(sizes.index.tolist()))


def stacked_groups(codes: np.ndarray, groups: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The rows of each of ``groups`` groups, stacked by size: per size, the groups of that size
    and a ``(groups, size)`` array of their row positions, each group's rows in table order.
    ``codes`` gives each row's group number (a row coded NaN or negative is in none; a group
    without rows is left out)."""
    import numpy as np

    kept = np.flatnonzero(codes >= 0)  # NaN >= 0 is False
    members = codes[kept].astype(np.intp)
    positions = kept[np.argsort(members, kind="stable")]
    counts = np.bincount(members, minlength=groups)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.intp)
    batches = []
    for size in np.unique(counts[counts > 0]):
        chosen = np.flatnonzero(counts == size)
        batches.append((chosen, positions[starts[chosen][:, None] + np.arange(size)]))
    return batches


def _reduce_rows(block: np.ndarray) -> dict[str, Any]:
    """Each row's statistics by pandas' own reductions; raises where a histogram would."""
    import numpy as np
    from pandas.core import nanops  # type: ignore[attr-defined]  # private, unstubbed: what DataFrame reductions run

    high = nanops.nanmax(block, axis=1, skipna=True)
    low = nanops.nanmin(block, axis=1, skipna=True)
    floats = block.astype(np.float64)
    present = ~np.isnan(floats)
    for row in np.flatnonzero(present.any(axis=1)):
        if not bins_certainly_fit(float(low[row]), float(high[row])):
            np.histogram(block[row][present[row]], bins=HISTOGRAM_BINS)
    return {
        "mean": nanops.nanmean(block, axis=1, skipna=True),
        "max": high,
        "min": low,
        "median": middle_means(floats, present.sum(axis=1)),
        "std": nanops.nanstd(block, axis=1, skipna=True, ddof=1),
        "complete": present.all(axis=1),
    }


def middle_means(floats: np.ndarray, present: np.ndarray) -> np.ndarray:
    """numpy's 1-d median of each row's present values: the mean of the middle one (odd) or
    two (even) values, as numpy's ``mean`` sums and divides them; NaN for an empty row."""
    import numpy as np

    ordered = np.sort(floats, axis=1)  # NaN sorts last
    half = present // 2
    odd = present % 2 == 1
    low = np.where(odd, half, np.maximum(half - 1, 0))
    pairs = np.take_along_axis(ordered, np.stack([low, half], axis=1).clip(0, floats.shape[1] - 1), axis=1)
    medians: np.ndarray[Any, np.dtype[np.float64]] = np.where(odd, pairs[:, 1:].mean(axis=1), pairs.mean(axis=1))
    medians[present == 0] = np.nan
    return medians


def _group_stats(index: int, names: Sequence[Sequence[str]], per_column: list[dict[str, Any]], integral: bool) -> dict[str, Any]:
    """One group's statistics; ``names[s][c]`` is the key of statistic ``STATS[s]`` of column ``c``
    (made once for all groups: a run of many tasks holds one entry per task until it is written)."""
    spreads = [results["std"][index] for results in per_column]
    if all(math.isnan(value) for value in spreads):
        spreads = [0.0 if results["complete"][index] else value for results, value in zip(per_column, spreads, strict=True)]
    out: dict[str, Any] = {}
    for stat, keys in zip(STATS, names, strict=True):
        for position, key in enumerate(keys):
            value = spreads[position] if stat == "std" else per_column[position][stat][index]
            value = int(value) if integral and stat in ("max", "min") else float(value)
            if not math.isnan(value):
                out[key] = value
    return out


def _describe_frame(frame: pd.DataFrame) -> dict[str, Any]:
    """One frame's statistics with pandas' DataFrame reductions (the exotic-column path)."""
    import numpy as np
    import pandas as pd

    reductions = [frame.mean(), frame.max(), frame.min(), frame.median(), frame.std()]
    for column in frame.columns:
        low, high = reductions[2][column], reductions[1][column]
        numeric = frame[column].dtype.kind in "iuf"
        if numeric and (pd.isna(low) or bins_certainly_fit(float(low), float(high))):
            continue
        values = frame[column].dropna()
        if len(values):
            np.histogram(values, bins=HISTOGRAM_BINS)
    spread = reductions[4]
    if spread.isna().all():
        complete = frame.columns[frame.notna().all()]
        spread[complete] = spread[complete].fillna(0)
    return {
        f"{stat}/{column}": plain(value)
        for stat, series in zip(STATS, reductions, strict=True)
        for column, value in series.items()
        if value is not None and not pd.isna(value)
    }


def bins_certainly_fit(low: float, high: float) -> bool:
    """64 equal bins between ``low`` and ``high`` (widened by 0.5 each way when equal) are
    far wider than a float's spacing at that magnitude, so numpy cannot refuse them."""
    magnitude = max(abs(low), abs(high))
    if low == high:
        return magnitude < 2.0**40
    span = high - low
    return math.isfinite(span) and span / HISTOGRAM_BINS > magnitude * 2.0**-40


def plain(value: Any) -> Any:
    """A numpy scalar as the Python number pandas' ``to_dict`` would give; others unchanged."""
    item = getattr(value, "item", None)
    return item() if item is not None and type(value).__module__ == "numpy" else value
