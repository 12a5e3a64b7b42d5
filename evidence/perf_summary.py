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
from collections.abc import Sequence
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


def compute_perf_summary(records: Sequence[Any], total_rollouts: int) -> dict[str, Any] | None:
    """Summarise ``ng_perf`` values over ``total_rollouts`` rollouts of one server group.

    Args:
        records: each rollout's ``ng_perf`` value; only JSON objects count as records (a missing
            or malformed value still counts in ``total_rollouts``, lowering both coverages).
        total_rollouts: the denominator of the two coverages.

    Returns:
        The summary with keys in 0.7.0's order, or None when there is nothing to summarise.
    """
    perf = [record for record in records if isinstance(record, dict)]
    if total_rollouts <= 0 or not perf:
        return None
    tokens_observed = [r.get("token_observability_coverage") for r in perf]
    summary: dict[str, Any] = {
        "overall_observability_coverage": len(perf) / total_rollouts,
        "token_observability_coverage": sum(_numeric(v) and v > 0 for v in tokens_observed) / total_rollouts,
    }
    for field in TOKEN_FIELDS:
        summary |= _token_stats(field, _values(perf, field))
    summary |= _turn_stats(_values(perf, "num_turns"))
    ratios = [
        r["completion_tokens"] / r["num_turns"] for r in perf
        if _numeric(r.get("completion_tokens")) and _numeric(r.get("num_turns")) and r["num_turns"] > 0
    ]
    if ratios:
        summary |= {"mean_tokens_per_turn": statistics.fmean(ratios), "median_tokens_per_turn": statistics.median(ratios)}
    summary |= _latency_stats(_values(perf, "total_latency_ms"))
    return summary


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


def _values(records: Sequence[dict[str, Any]], field: str) -> list[int | float]:
    return [record[field] for record in records if _numeric(record.get(field))]


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float))
