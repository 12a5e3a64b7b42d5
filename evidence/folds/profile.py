"""0.7.0's reward profile of one group's scored rollouts: per task, overall, per repeat.

Why pandas and scipy: 0.7.0 computes these numbers with ``DataFrame`` reductions, ``Series``
statistics and ``scipy.stats.t``, and a float that must equal 0.7.0's to the last bit has to be
summed, divided and interpolated the way those libraries do it (numpy's pairwise sums, pandas'
two-pass variance, numpy's linear quantiles, boost's t quantiles). So this module builds the
same table from the digests' numbers and asks the same questions of it; the dtype pandas
infers for a column (int64 unless a value is missing or fractional) also decides whether a
``max/...`` prints as ``1`` or ``1.0``. Both libraries are imported inside the functions: the
CLI starts without them.

The per-task and per-agent statistics come from :mod:`evidence.folds.describe` (batched,
with the histograms 0.7.0 draws and throws away replayed where they could raise); the rest is
here. 0.7.0 computes the per-repeat and across-repeats statistics with ``Series`` methods
(``mean``, ``median``, ``std``, ``min``, ``max``, ``quantile``) on each group's values with
the NaN dropped; one call per group, column and statistic was about a third of the reduce's time, so
the groups with as many values are stacked into one array (``describe.stacked_groups``) and
reduced along its rows by what those methods run on one group's values: pandas' ``nanops``
functions (each row summed on its own, as a 1-d array is), numpy's median (the mean of the
middle values; a zero's sign cannot matter, the sum starts at +0.0) and ``np.quantile`` with
``q`` as ``[q]`` (each row partitioned alone with the same ``kth``, so a quartile even lands on
the same zero). Columns that are not int/uint/float and rows longer than numpy's casting
buffer keep the ``Series`` methods.

Shapes (key order is part of the output):

* per task: ``mean/<col>`` for every column, then ``max/``, ``min/``, ``median/``, ``std/``
  (sample deviation; 0 for a one-row task), values that are NaN left out;
* overall: the same statistics over all rows, then ``<stat>_across_repeats/mean/<col>``;
* per repeat (only with two or more rollout indices): ``sample_count``, ``missing_count``,
  then per column in sorted order ``mean median std sem min max p25 p75`` and a 95 % t
  interval ``ci_low_95``/``ci_high_95`` when two or more values vary.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from evidence.folds.describe import describe_groups, middle_means, plain, stacked_groups
from evidence.folds.digest import ROLLOUT_KEY, TASK_KEY
from evidence.folds.packed import PackedDigest

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = ["Profile", "is_point_estimate", "profile_rollouts"]

AGENT_COLUMN = "agent_name"
SYNTHETIC_AGENT = "agent"
"""0.7.0 profiles a server group as one agent of this name (what the ``sample`` shows)."""
ACROSS_REPEATS = "_across_repeats/"
CONFIDENCE = 0.95
"""The repeats' t interval's confidence (0.7.0's)."""
QUARTILES = (0.25, 0.75)
CAST_BUFFER = 8192
"""numpy's casting buffer (elements): a 1-d int array longer than this is cast and summed in
buffer-sized pieces, which a stacked row need not match, so a group with more values (of any
dtype) takes the ``Series`` path."""

_NOT_METRICS = frozenset(
    (TASK_KEY, ROLLOUT_KEY, "_ng_attempt_index", "sample_count", "missing_count", "num_repeats", "token_usage_version")
)
_SUMMARY_PREFIXES = tuple(
    f"{stat}/" for stat in ("max", "min", "median", "std", "sem", "se", "p25", "p75", "ci_low_95", "ci_high_95", "histogram")
)
_SUMMARY_SUFFIXES = (
    *(f"/{stat}" for stat in ("max", "min", "median", "p5", "p25", "p75", "p95", "ci_low_95", "ci_high_95", "ci_lower", "ci_upper")),
    *("_ci_lower", "_ci_upper", "_ci95_lower", "_ci95_upper", "/_ng_attempt_index"),
    *(f"/{stat}" for stat in ("std_dev_across_runs", "std_err_across_runs", "avg_sample_std_dev")),
)


@dataclass(frozen=True, slots=True)
class Profile:
    """One group's profile: per-task entries, overall metrics, per-repeat entries.

    ``tasks`` makes each task's entry (its statistics and every rollout's ``rollout_infos``)
    as it is reached, once: the entries are written one by one, never all held.
    """

    tasks: Iterator[dict[str, Any]]
    overall: dict[str, Any]
    repeats: list[dict[str, Any]]


def is_point_estimate(name: object) -> bool:
    """Whether 0.7.0 summarises a per-repeat column across repeats (a point estimate, not a
    spread, bound, count or index)."""
    return (
        isinstance(name, str)
        and name not in _NOT_METRICS
        and not name.startswith(_SUMMARY_PREFIXES)
        and not name.endswith(_SUMMARY_SUFFIXES)
        and ACROSS_REPEATS not in name
    )


def profile_rollouts(aligned: Sequence[PackedDigest]) -> Profile:
    """Profile scored rollouts given in ``(task, rollout)`` order (0.7.0's alignment order).

    Raises whatever 0.7.0 raises on the same numbers (the caller reports the group as left out),
    before it returns: making the task entries afterwards cannot raise.
    """
    import pandas as pd

    by_task: dict[Any, list[PackedDigest]] = defaultdict(list)
    for digest in aligned:
        by_task[digest.task].append(digest)
    # the records go as soon as the table is made (a dict per rollout: the profile's largest object)
    table = pd.DataFrame.from_records(
        [{AGENT_COLUMN: SYNTHETIC_AGENT, TASK_KEY: d.task, ROLLOUT_KEY: d.rollout, **dict(d.measures)} for d in aligned]
    )
    columns = [column for column in table.columns if column not in (AGENT_COLUMN, TASK_KEY, ROLLOUT_KEY)]

    tasks = describe_groups(table, TASK_KEY, columns)
    agents = describe_groups(table, AGENT_COLUMN, columns)
    repeats = _per_repeat(table)
    across = _across_repeats(repeats)

    overall: dict[str, Any] = {}
    for agent, stats in agents:
        overall.update(stats)
        overall.update(across.get(agent, {}))
    return Profile(
        tasks=(_task_entry(task, stats, by_task.get(task, ())) for task, stats in tasks),
        overall=overall,
        repeats=[{key: value for key, value in entry.items() if key != "agent_ref"} for entry in repeats],
    )


def _task_entry(task: Any, stats: dict[str, Any], digests: Sequence[PackedDigest]) -> dict[str, Any]:
    # Every aligned rollout has its input row, so a task is always complete here. The digests
    # are in key order, so sorting by rollout (as 0.7.0 does) keeps their order and cannot raise.
    infos = [dict(digest.info) for digest in digests]
    return {
        TASK_KEY: task,
        **stats,
        "sample": {"agent_ref": {"name": SYNTHETIC_AGENT}},
        "num_rollouts": len(infos),
        "expected_num_rollouts": len(infos),
        "missing_num_rollouts": 0,
        "reward_profile_completion_pct": 100.0,
        "rollout_infos": sorted(infos, key=lambda info: info[ROLLOUT_KEY]),
    }


def _per_repeat(table: pd.DataFrame) -> list[dict[str, Any]]:
    """One entry per (agent, rollout index) of an agent with two or more rollout indices."""
    import numpy as np

    columns = table.select_dtypes(include="number").columns.difference([TASK_KEY, ROLLOUT_KEY])
    indices = table.groupby(AGENT_COLUMN)[ROLLOUT_KEY].nunique()
    repeated = table[table[AGENT_COLUMN].isin(set(indices[indices > 1].index))]
    if repeated.empty:
        return []
    tasks = repeated.groupby(AGENT_COLUMN)[TASK_KEY].nunique()
    grouped = repeated.groupby([AGENT_COLUMN, ROLLOUT_KEY])
    present = grouped[TASK_KEY].nunique()
    spreads = _group_spreads(repeated, grouped.ngroup().to_numpy(dtype=np.float64), len(present), columns, per_repeat=True)
    entries = []
    for (agent, rollout), count, spread in zip(present.index, present.tolist(), spreads, strict=True):
        entry: dict[str, Any] = {
            "agent_ref": {"name": agent},
            ROLLOUT_KEY: int(rollout),
            "sample_count": count,
            "missing_count": int(tasks[agent]) - count,
        }
        entries.append(entry | spread)
    return entries


def _across_repeats(entries: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """Per agent: each per-repeat point estimate summarised over the repeats."""
    if not entries:
        return {}
    import numpy as np
    import pandas as pd

    table = pd.DataFrame.from_records(entries)
    table[AGENT_COLUMN] = table["agent_ref"].apply(lambda ref: ref["name"])
    columns = [column for column in table.select_dtypes(include="number").columns if is_point_estimate(column)]
    grouped = table.groupby(AGENT_COLUMN)
    agents = grouped.size().index
    spreads = _group_spreads(table, grouped.ngroup().to_numpy(dtype=np.float64), len(agents), columns, per_repeat=False)
    return {plain(agent): spread for agent, spread in zip(agents, spreads, strict=True)}


class _Summary(NamedTuple):
    """One group's statistics of one column's values; ``quartiles`` (p25, p75) per repeat only."""

    size: int
    mean: float
    median: float
    std: float
    low: float
    high: float
    quartiles: tuple[float, float] | None


def _group_spreads(
    table: pd.DataFrame, codes: np.ndarray, groups: int, columns: Iterable[str], *, per_repeat: bool
) -> list[dict[str, float]]:
    """Per group (``codes`` numbers each row's group, NaN for none): the statistics of every
    column's values that are not NaN, in column order; a column without any is left out."""
    spreads: list[dict[str, float]] = [{} for _ in range(groups)]
    for column in columns:
        for group, summary in _column_summaries(table[column], codes, groups, per_repeat=per_repeat):
            spreads[group] |= _spread(summary, column)
    return spreads


def _column_summaries(values: pd.Series, codes: np.ndarray, groups: int, *, per_repeat: bool) -> Iterator[tuple[int, _Summary]]:
    """``(group, summary)`` for each group with values (NaN dropped): the groups with as many
    values stacked and reduced together; a column that is not int/uint/float, or a group too
    long for one casting buffer, by the ``Series`` methods."""
    import numpy as np

    batched = isinstance(values.dtype, np.dtype) and values.dtype.kind in "iuf"
    data = values.to_numpy()
    for members, rows in stacked_groups(np.where(values.notna().to_numpy(), codes, np.nan), groups):
        if batched and rows.shape[1] <= CAST_BUFFER:
            summaries = _row_summaries(data[rows], per_repeat=per_repeat)
        else:
            summaries = [_series_summary(values.iloc[positions], per_repeat=per_repeat) for positions in rows]
        yield from zip(members.tolist(), summaries, strict=True)


def _row_summaries(block: np.ndarray, *, per_repeat: bool) -> list[_Summary]:
    """Each row's summary by the functions ``Series`` methods run on a row alone: pandas'
    ``nanops`` along the rows, numpy's median (the middle values' mean) and ``np.quantile`` of
    the block with ``q`` as the array ``[q]`` (each row partitioned on its own)."""
    import numpy as np
    from pandas.core import nanops  # type: ignore[attr-defined]  # private, unstubbed: what Series reductions run

    rows, count = block.shape
    means = nanops.nanmean(block, axis=1, skipna=True)
    deviations = nanops.nanstd(block, axis=1, skipna=True, ddof=1) if count > 1 else np.zeros(rows)
    medians = middle_means(block.astype(np.float64), np.full(rows, count))
    lows = nanops.nanmin(block, axis=1, skipna=True)
    highs = nanops.nanmax(block, axis=1, skipna=True)
    quartiles: list[tuple[float, float] | None] = [None] * rows
    if per_repeat:
        low, high = (np.quantile(block, np.array([q]), axis=1, method="linear")[0] for q in QUARTILES)
        quartiles = [(float(a), float(b)) for a, b in zip(low, high, strict=True)]
    return [
        _Summary(count, float(mean), float(median), float(deviation), float(least), float(most), quartile)
        for mean, median, deviation, least, most, quartile in zip(means, medians, deviations, lows, highs, quartiles, strict=True)
    ]


def _series_summary(values: pd.Series, *, per_repeat: bool) -> _Summary:
    """One group's summary by 0.7.0's own ``Series`` calls, in its order (an extension column
    can raise, and the first call that does decides the error)."""
    count = len(values)
    mean = float(values.mean())
    deviation = float(values.std(ddof=1)) if count > 1 else 0.0
    median, low, high = float(values.median()), float(values.min()), float(values.max())
    quartiles = (float(values.quantile(QUARTILES[0])), float(values.quantile(QUARTILES[1]))) if per_repeat else None
    return _Summary(count, mean, median, deviation, low, high, quartiles)


def _spread(summary: _Summary, column: str) -> dict[str, float]:
    """Centre, spread, range and t interval of one column (the two layouts 0.7.0 writes)."""
    error = summary.std / summary.size**0.5
    if summary.quartiles is not None:
        stats = {
            "mean": summary.mean,
            "median": summary.median,
            "std": summary.std,
            "sem": error,
            "min": summary.low,
            "max": summary.high,
            "p25": summary.quartiles[0],
            "p75": summary.quartiles[1],
        }
        marker = "/"
    else:
        stats = {
            "mean": summary.mean,
            "median": summary.median,
            "std": summary.std,
            "min": summary.low,
            "max": summary.high,
            "se": error,
        }
        marker = ACROSS_REPEATS
    interval = _t_interval(summary.mean, error, summary.size)
    if interval is not None:
        stats["ci_low_95"], stats["ci_high_95"] = interval
    return {f"{stat}{marker}{column}": value for stat, value in stats.items()}


def _t_interval(mean: float, error: float, count: int) -> tuple[float, float] | None:
    """The 95 % Student t interval; none for one value, a point when every value is equal."""
    if count <= 1:
        return None
    if error == 0:
        return mean, mean
    # ``scipy.stats.t.interval(0.95, df, loc=mean, scale=error)`` is ``ppf((1 -/+ 0.95) / 2)``,
    # and ``t.ppf(q)`` is ``stdtrit(df, q) * scale + loc`` where ``scale > 0`` and ``loc == loc``
    # (else nan): the same float operations on the same boost quantile, without importing
    # ``scipy.stats`` (most of a second of the reduce's CPU).
    if not (error > 0 and not math.isnan(mean)):
        return math.nan, math.nan
    from scipy.special import stdtrit

    df = count - 1
    low = stdtrit(df, (1.0 - CONFIDENCE) / 2) * error + mean
    high = stdtrit(df, (1.0 + CONFIDENCE) / 2) * error + mean
    return float(low), float(high)
