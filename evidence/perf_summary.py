"""``perf_summary``: 0.7.0's run-level summary of per-rollout ``ng_perf`` records.

Types are part of the contract (the JSON must match byte for byte): means and percentiles are
floats, an odd-length median is the middle element itself, totals stay ints for int inputs, and
min/max keep the element's type, bools included. Bools count as numbers, as in 0.7.0.
"""

from __future__ import annotations

import functools
import math
import operator
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

TOKEN_FIELDS = ("prompt_tokens", "cached_prompt_tokens", "completion_tokens", "reasoning_tokens")
LATENCY_QUANTILES = (50, 90, 99)
SUMMARY_FIELDS = ("token_observability_coverage", *TOKEN_FIELDS, "num_turns", "total_latency_ms")


def summary_input(record: Any) -> dict[str, Any] | None:
    """The part of one ``ng_perf`` value the summary reads; None when it is not a record.

    A reduce keeps one of these per rollout until the quantiles are computed, so it keeps only
    ``SUMMARY_FIELDS``: the summary of the trimmed records equals the summary of the originals.
    """
    if not isinstance(record, dict):
        return None
    return {field: record[field] for field in SUMMARY_FIELDS if field in record}


def compute_perf_summary(records: Iterable[Any], total_rollouts: int) -> dict[str, Any] | None:
    """Summarise ``ng_perf`` values over ``total_rollouts`` rollouts of one server group.

    Args:
        records: each rollout's ``ng_perf`` value, read once, in file order (float totals
            depend on it); only JSON objects count as records (a missing or malformed value
            still counts in ``total_rollouts``, lowering both coverages). Only the numbers the
            summary needs are kept, so a caller may stream the records from disk.
        total_rollouts: the denominator of the two coverages.

    Returns:
        The summary with keys in 0.7.0's order, or None when there is nothing to summarise.
    """
    columns = _Columns()
    for record in records:
        if isinstance(record, dict):
            columns.add(record)
    if total_rollouts <= 0 or not columns.records:
        return None
    summary: dict[str, Any] = {
        "overall_observability_coverage": columns.records / total_rollouts,
        "token_observability_coverage": columns.tokens_observed / total_rollouts,
    }
    for field in TOKEN_FIELDS:
        summary |= _token_stats(field, columns.values[field])
    summary |= _turn_stats(columns.values["num_turns"])
    if columns.ratios:
        summary |= {
            "mean_tokens_per_turn": statistics.fmean(columns.ratios),
            "median_tokens_per_turn": statistics.median(columns.ratios),
        }
    summary |= _latency_stats(columns.values["total_latency_ms"])
    return summary


class _Columns:
    """The numeric values a summary reads, gathered from records one at a time (file order kept)."""

    def __init__(self) -> None:
        self.records = 0
        self.tokens_observed = 0
        self.values: dict[str, list[int | float]] = {field: [] for field in (*TOKEN_FIELDS, "num_turns", "total_latency_ms")}
        self.ratios: list[float] = []

    def add(self, record: dict[str, Any]) -> None:
        self.records += 1
        observed = record.get("token_observability_coverage")
        self.tokens_observed += _numeric(observed) and observed > 0
        for field, column in self.values.items():
            if _numeric(record.get(field)):
                column.append(record[field])
        completion, turns = record.get("completion_tokens"), record.get("num_turns")
        if _numeric(completion) and _numeric(turns) and turns > 0:
            self.ratios.append(completion / turns)


def _token_stats(field: str, values: list[int | float]) -> dict[str, Any]:
    if not values:
        return {}
    return {
        f"mean_{field}": statistics.fmean(values),
        f"median_{field}": statistics.median(values),
        f"total_{field}": _naive_total(values),
    }


def _turn_stats(turns: list[int | float]) -> dict[str, Any]:
    if not turns:
        return {}
    return {
        "mean_num_turns": statistics.fmean(turns),
        "median_num_turns": statistics.median(turns),
        "std_num_turns": statistics.pstdev(turns),
        "min_num_turns": min(turns),
        "p90_num_turns": quantile(turns, 0.9),
        "max_num_turns": max(turns),
    }


def _latency_stats(latencies: list[int | float]) -> dict[str, Any]:
    if not latencies:
        return {}
    stats: dict[str, Any] = {f"total_latency_p{q}_ms": quantile(latencies, q / 100) for q in LATENCY_QUANTILES}
    stats["total_latency_mean_ms"] = statistics.fmean(latencies)
    return stats


def quantile(values: Sequence[int | float], q: float) -> float:
    """pandas ``Series.quantile`` (numpy "linear"), reproduced bit for bit in pure Python.

    0.7.0 raises TypeError for a list made only of bools (numpy cannot subtract booleans); we
    treat them as 0.0/1.0 instead, so such a record set still gets a summary.
    """
    ordered = sorted(float(value) for value in values)
    position = (len(ordered) - 1) * q
    index = math.floor(position)
    fraction = position - index
    low, high = ordered[index], ordered[min(index + 1, len(ordered) - 1)]
    if fraction >= 0.5:
        return high - (high - low) * (1 - fraction)
    return low + (high - low) * fraction


def _naive_total(values: Sequence[int | float]) -> int | float:
    """Left-to-right ``+`` from int 0, as Python 3.11's ``sum`` (3.12+ compensates floats)."""
    return functools.reduce(operator.add, values, 0)


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float))
