"""The reward profile's per-repeat and across-repeats statistics (``evidence.folds.profile``).

The batched statistics are pinned two ways: against numbers worked out by hand on a small
table, and against 0.7.0's own ``Series`` calls group by group (strictly: bits, key order and
types) on random tables, and with every group forced through the ``Series`` path.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evidence.folds import profile
from evidence.folds.describe import stacked_groups
from evidence.folds.digest import ROLLOUT_KEY, TASK_KEY


def table_of(rows: list[tuple[str, int, int, dict[str, Any]]]) -> Any:
    import pandas as pd

    return pd.DataFrame.from_records([{profile.AGENT_COLUMN: a, TASK_KEY: t, ROLLOUT_KEY: r, **values} for a, t, r, values in rows])


def hand_table() -> Any:
    nan = math.nan
    rows = [
        *(("a", task, 0, {"reward": reward, "turns": 1}) for task, reward in enumerate([1.0, 2.0, 3.0, 4.0])),
        *(
            ("a", task, 1, {"reward": reward, "turns": turns})
            for task, reward, turns in zip(range(4), [0.0, 10.0, nan, 5.0], [2, 4, 6, 8], strict=True)
        ),
        *(("a", task, 2, {"reward": reward, "turns": 3}) for task, reward in enumerate([3.0, 1.0])),
    ]
    return table_of(rows)


def spread(column: str, count: int, values: dict[str, float]) -> dict[str, float]:
    """A per-repeat column block as 0.7.0 writes it from ``mean median std min max p25 p75``:
    ``sem`` after ``std``, then the t interval (scipy.stats' own)."""
    from scipy import stats

    sem = values["std"] / count**0.5
    block = {**dict(list(values.items())[:3]), "sem": sem, **dict(list(values.items())[3:])}
    low, high = (values["mean"],) * 2 if sem == 0 else stats.t.interval(0.95, count - 1, loc=values["mean"], scale=sem)
    return {
        **{f"{stat}/{column}": value for stat, value in block.items()},
        f"ci_low_95/{column}": float(low),
        f"ci_high_95/{column}": float(high),
    }


def test_per_repeat_statistics_worked_out_by_hand() -> None:
    entries = profile._per_repeat(hand_table())
    expected = [
        {
            "agent_ref": {"name": "a"},
            ROLLOUT_KEY: 0,
            "sample_count": 4,
            "missing_count": 0,
            # 1 2 3 4: variance (2.25 + 0.25 + 0.25 + 2.25) / 3; p25 at 0.75, p75 at 2.25
            **spread("reward", 4, {"mean": 2.5, "median": 2.5, "std": math.sqrt(5 / 3), "min": 1.0, "max": 4.0, "p25": 1.75, "p75": 3.25}),
            **spread("turns", 4, {"mean": 1.0, "median": 1.0, "std": 0.0, "min": 1.0, "max": 1.0, "p25": 1.0, "p75": 1.0}),
        },
        {
            "agent_ref": {"name": "a"},
            ROLLOUT_KEY: 1,
            "sample_count": 4,
            "missing_count": 0,
            # the NaN is dropped first: 0 10 5, so three values (not 0 10 0 5, nor a NaN quartile)
            **spread("reward", 3, {"mean": 5.0, "median": 5.0, "std": 5.0, "min": 0.0, "max": 10.0, "p25": 2.5, "p75": 7.5}),
            **spread("turns", 4, {"mean": 5.0, "median": 5.0, "std": math.sqrt(20 / 3), "min": 2.0, "max": 8.0, "p25": 3.5, "p75": 6.5}),
        },
        {
            "agent_ref": {"name": "a"},
            ROLLOUT_KEY: 2,
            "sample_count": 2,
            "missing_count": 2,
            **spread("reward", 2, {"mean": 2.0, "median": 2.0, "std": math.sqrt(2), "min": 1.0, "max": 3.0, "p25": 1.5, "p75": 2.5}),
            **spread("turns", 2, {"mean": 3.0, "median": 3.0, "std": 0.0, "min": 3.0, "max": 3.0, "p25": 3.0, "p75": 3.0}),
        },
    ]
    assert entries == expected
    assert [list(entry) for entry in entries] == [list(entry) for entry in expected]  # key order too
    assert all(type(value) is float for entry in entries for key, value in entry.items() if "/" in key)


def test_across_repeats_summarises_the_point_estimates() -> None:
    across = profile._across_repeats(profile._per_repeat(hand_table()))
    assert list(across) == ["a"]
    # the repeats' means: reward 2.5 5 2, turns 1 5 3
    reward = {key: value for key, value in across["a"].items() if key.endswith("/mean/reward")}
    assert list(reward) == [
        f"{stat}_across_repeats/mean/reward" for stat in ("mean", "median", "std", "min", "max", "se", "ci_low_95", "ci_high_95")
    ]
    assert reward["mean_across_repeats/mean/reward"] == 9.5 / 3
    assert reward["median_across_repeats/mean/reward"] == 2.5
    assert (reward["min_across_repeats/mean/reward"], reward["max_across_repeats/mean/reward"]) == (2.0, 5.0)
    assert across["a"]["std_across_repeats/mean/turns"] == 2.0
    assert across["a"]["se_across_repeats/mean/turns"] == 2.0 / 3**0.5


def test_an_agent_with_one_rollout_index_has_no_repeats() -> None:
    table = table_of([("a", 0, 0, {"x": 1.0}), ("a", 1, 0, {"x": 2.0}), ("b", 0, 0, {"x": 1.0}), ("b", 0, 1, {"x": 3.0})])
    assert [(entry["agent_ref"], entry[ROLLOUT_KEY]) for entry in profile._per_repeat(table)] == [({"name": "b"}, 0), ({"name": "b"}, 1)]
    assert profile._per_repeat(table_of([("a", 0, 0, {"x": 1.0}), ("a", 1, 0, {"x": 2.0})])) == []


def test_stacked_groups_keep_table_order_and_leave_out_empty_groups() -> None:
    import numpy as np

    batches = stacked_groups(np.array([1.0, np.nan, 0.0, 1.0, -1.0, 1.0, 3.0]), 4)
    assert [(groups.tolist(), rows.tolist()) for groups, rows in batches] == [([0, 3], [[2], [6]]), ([1], [[0, 3, 5]])]


def series_reference(table: Any) -> list[dict[str, Any]]:
    """0.7.0's per-repeat entries, group by group with ``Series`` calls (the unbatched code)."""
    columns = table.select_dtypes(include="number").columns.difference([TASK_KEY, ROLLOUT_KEY])
    indices = table.groupby(profile.AGENT_COLUMN)[ROLLOUT_KEY].nunique()
    repeated = table[table[profile.AGENT_COLUMN].isin(set(indices[indices > 1].index))]
    if repeated.empty:
        return []
    tasks = repeated.groupby(profile.AGENT_COLUMN)[TASK_KEY].nunique()
    entries = []
    for (agent, rollout), rows in repeated.groupby([profile.AGENT_COLUMN, ROLLOUT_KEY]):
        present = int(rows[TASK_KEY].nunique())
        entry: dict[str, Any] = {"agent_ref": {"name": agent}, ROLLOUT_KEY: int(rollout), "sample_count": present}
        entry["missing_count"] = int(tasks[agent]) - present
        for column in columns:
            values = rows[column].dropna()
            if len(values):
                count, mean = len(values), float(values.mean())
                std = float(values.std(ddof=1)) if count > 1 else 0.0
                stats = {"mean": mean, "median": float(values.median()), "std": std, "sem": std / count**0.5}
                stats |= {"min": float(values.min()), "max": float(values.max())}
                stats |= {"p25": float(values.quantile(0.25)), "p75": float(values.quantile(0.75))}
                interval = profile._t_interval(mean, stats["sem"], count)
                if interval is not None:
                    stats["ci_low_95"], stats["ci_high_95"] = interval
                entry |= {f"{stat}/{column}": value for stat, value in stats.items()}
        entries.append(entry)
    return entries


def strictly(value: Any) -> Any:
    """Bits, key order and types: a float as its bytes (NaN and -0.0 count)."""
    if isinstance(value, dict):
        return [(key, strictly(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [strictly(item) for item in value]
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    return (type(value).__name__, value)


FLOATS = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, 0.1, 1 / 3, 1e308, -1e308, 5e-324, 1e-308, math.inf, math.nan, math.nan]),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
)
INTS = st.one_of(st.sampled_from([0, 1, 2**53 + 1, 2**63 - 1, -(2**63)]), st.integers(min_value=-1000, max_value=1000))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # overflow on 1e308, as in 0.7.0
@settings(max_examples=60, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(["f", "i"]), min_size=0, max_size=3),
    layout=st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 3), st.integers(0, 12)), min_size=1, max_size=60),
    data=st.data(),
)
def test_batched_statistics_equal_series_calls_group_by_group(
    kinds: list[str], layout: list[tuple[str, int, int]], data: st.DataObject
) -> None:
    rows = [
        (agent, task, rollout, {f"c{i}": data.draw(FLOATS if kind == "f" else INTS) for i, kind in enumerate(kinds)})
        for agent, rollout, task in layout
    ]
    table = table_of(rows)
    entries = profile._per_repeat(table)
    assert strictly(entries) == strictly(series_reference(table))
    across = profile._across_repeats(entries)
    assert strictly(across) == strictly(forced_series(lambda: profile._across_repeats(entries)))


def test_a_quartile_lands_on_the_same_signed_zero() -> None:
    """Which of equal zeros a quartile picks follows numpy's partition of that one quartile
    (asking for both quartiles at once picks differently)."""
    import random

    rng = random.Random(3)  # five of its eight quartiles are -0.0
    rows = [("a", task, rollout, {"z": rng.choice([0.0, -0.0])}) for task in range(31) for rollout in range(4)]
    table = table_of(rows)
    entries = profile._per_repeat(table)
    assert strictly(entries) == strictly(series_reference(table))
    quartiles = [entry[key] for entry in entries for key in ("p25/z", "p75/z")]
    assert any(math.copysign(1, value) < 0 for value in quartiles)


def forced_series(run: Any) -> Any:
    """``run()`` with every group reduced by the ``Series`` path (none fits the cast buffer)."""
    saved = profile.CAST_BUFFER
    profile.CAST_BUFFER = 0
    try:
        return run()
    finally:
        profile.CAST_BUFFER = saved


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_long_groups_and_nullable_columns_take_the_series_path() -> None:
    import pandas as pd

    table = hand_table()
    table["turns"] = table["turns"].astype("Int64")
    expected = strictly(series_reference(table))
    assert strictly(profile._per_repeat(table)) == expected
    assert strictly(forced_series(lambda: profile._per_repeat(table))) == expected
    # an int column longer than numpy's casting buffer: pandas sums it in 8192-value pieces
    count = profile.CAST_BUFFER + 3
    values = [(2**62 + 12345 * i) * (-1) ** i for i in range(2 * count)]
    long = pd.DataFrame(
        {
            profile.AGENT_COLUMN: "a",
            TASK_KEY: [i % count for i in range(2 * count)],
            ROLLOUT_KEY: [i // count for i in range(2 * count)],
            "x": values,
        }
    )
    assert strictly(profile._per_repeat(long)) == strictly(series_reference(long))
