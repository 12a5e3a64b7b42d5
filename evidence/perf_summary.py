"""``perf_summary``: 0.7.0's run-level summary of per-rollout ``ng_perf`` records.

Types are part of the contract (the JSON must match byte for byte): means and percentiles are
floats, an odd-length median is the middle element itself, totals stay ints for int inputs, and
min/max keep the element's type, bools included. Bools count as numbers, as in 0.7.0.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeGuard

TOKEN_FIELDS = ("prompt_tokens", "cached_prompt_tokens", "completion_tokens", "reasoning_tokens")
LATENCY_QUANTILES = (50, 90, 99)
SUMMARY_FIELDS = ("token_observability_coverage", *TOKEN_FIELDS, "num_turns", "total_latency_ms")


def summary_input(record: Any) -> dict[str, Any] | None:
    """The part of one ``ng_perf`` value the summary reads; None when it is not a record.

    A reduce keeps one of these per rollout until the quantiles are computed, so it keeps only
    the numbers among ``SUMMARY_FIELDS`` (the summary ignores every other value): the summary
    of the trimmed records equals the summary of the originals, and a digest never carries an
    arbitrary (deep, huge) input value.
    """
    if not isinstance(record, dict):
        return None
    return {field: record[field] for field in SUMMARY_FIELDS if _numeric(record.get(field))}


def perf_group(row: dict[str, Any]) -> str:
    """A row's perf_summary group: its environment-server stamp, else its agent name, else ''."""
    stamp = row.get("_ng_environment_server")
    if isinstance(stamp, str) and stamp:
        return stamp
    agent = row.get("agent_ref")
    name = agent.get("name") if isinstance(agent, dict) else None
    return name if isinstance(name, str) else ""


def compute_perf_summary(
    records: Iterable[Any], total_rollouts: int, problems: list[str] | None = None, columns: _Columns | None = None
) -> dict[str, Any] | None:
    """Summarise ``ng_perf`` values over ``total_rollouts`` rollouts of one server group.

    Args:
        records: each rollout's ``ng_perf`` value, read once, in file order (float totals
            depend on it); only JSON objects count as records (a missing or malformed value
            still counts in ``total_rollouts``, lowering both coverages). Only the numbers the
            summary needs are kept, so a caller may stream the records from disk.
        total_rollouts: the denominator of the two coverages.
        problems: where a statistic that cannot be computed is reported (0.7.0 raises, e.g.
            ``OverflowError`` when two ``1e308`` values are averaged); its keys are left out
            and the rest of the summary is kept.
        columns: numbers already gathered from earlier records (a fold's running columns).

    Returns:
        The summary with keys in 0.7.0's order, or None when there is nothing to summarise.
    """
    columns = columns if columns is not None else _Columns()
    for record in records:
        if isinstance(record, dict):
            columns.add(record)
    if total_rollouts <= 0 or not columns.records:
        return None
    summary: dict[str, Any] = {
        "overall_observability_coverage": columns.records / total_rollouts,
        "token_observability_coverage": columns.tokens_observed / total_rollouts,
    }
    blocks: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        *((field, functools.partial(_token_stats, field, columns.values[field])) for field in TOKEN_FIELDS),
        ("num_turns", functools.partial(_turn_stats, columns.values["num_turns"])),
        ("tokens_per_turn", functools.partial(_ratio_stats, columns.ratios)),
        ("total_latency_ms", functools.partial(_latency_stats, columns.values["total_latency_ms"])),
    ]
    for name, block in blocks:
        try:
            summary |= block()
        except (ArithmeticError, TypeError, ValueError) as exc:
            if problems is not None:
                problems.append(f"{name}: {type(exc).__name__}: {exc}")
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


def _ratio_stats(ratios: list[float]) -> dict[str, Any]:
    if not ratios:
        return {}
    return {"mean_tokens_per_turn": statistics.fmean(ratios), "median_tokens_per_turn": statistics.median(ratios)}


def _latency_stats(latencies: list[int | float]) -> dict[str, Any]:
    if not latencies:
        return {}
    stats: dict[str, Any] = {f"total_latency_p{q}_ms": quantile(latencies, q / 100) for q in LATENCY_QUANTILES}
    stats["total_latency_mean_ms"] = statistics.fmean(latencies)
    return stats


def quantile(values: Sequence[int | float], q: float) -> float:
    """pandas ``Series.quantile`` (numpy "linear"), reproduced bit for bit in pure Python.

    numpy interpolates in the column's dtype (``_column``): a float64 column as floats, an
    integer or object column by subtracting the two neighbours exactly before the weight makes
    them floats (int64 wrapping around when they are 2**63 or more apart). With one value,
    numpy takes it on both sides with weight 1, which keeps the sign of ``-0.0``. 0.7.0 raises
    TypeError for a list made only of bools (numpy cannot subtract booleans); we treat them as
    0/1 instead, so such a record set still gets a summary.
    """
    column = _column(values)
    ordered = sorted(float(value) for value in values) if column == "float64" else sorted(values)
    position = (len(ordered) - 1) * q
    if position >= len(ordered) - 1:  # numpy: past the last index, both sides are the last value
        index, fraction = len(ordered) - 1, position + 1
    else:
        index = math.floor(position)
        fraction = position - index
    low, high = ordered[index], ordered[min(index + 1, len(ordered) - 1)]
    difference = high - low
    if column == "int64":
        difference = (difference - _INT64_MIN) % 2**64 + _INT64_MIN
    if fraction >= 0.5:
        return float(high) - float(difference) * (1 - fraction)
    return float(low) + float(difference) * fraction


_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1


def _column(values: Sequence[int | float]) -> str:
    """The dtype pandas gives a Series of these values: "float64", "int64", or "exact" (uint64,
    or objects: any bool, or ints no one 64-bit type holds together), whose neighbours subtract
    exactly."""
    ints = [value for value in values if not isinstance(value, float)]
    low, high = min(ints, default=0), max(ints, default=0)
    if any(isinstance(value, bool) for value in ints) or low < _INT64_MIN or high > _UINT64_MAX or (low < 0 and high > _INT64_MAX):
        return "exact"
    if len(ints) < len(values):
        return "float64"
    return "int64" if high <= _INT64_MAX else "exact"


def _naive_total(values: Sequence[int | float]) -> int | float:
    """Left-to-right ``+`` from int 0, as Python 3.11's ``sum`` (3.12+ compensates floats)."""
    return functools.reduce(operator.add, values, 0)


def _numeric(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float))


class SortedSink(Protocol):
    """A stable sort the caller provides (in memory, or spilled to disk): pairs added, read back by key."""

    def add(self, key: Any, value: Any) -> None: ...

    def items(self) -> Iterable[tuple[Any, Any]]: ...


class InMemorySort:
    """The :class:`SortedSink` for small inputs: a list sorted stably by key when read."""

    def __init__(self) -> None:
        self._pairs: list[tuple[Any, Any]] = []

    def add(self, key: Any, value: Any) -> None:
        self._pairs.append((key, value))

    def items(self) -> Iterable[tuple[Any, Any]]:
        return sorted(self._pairs, key=operator.itemgetter(0))


class PerfSummaryFold:
    """``perf_summary.json`` from main rows' (group, record) pairs in file order.

    The run summary folds as rows arrive (only its numbers are kept); each group's summary
    needs its records in file order, which the caller's stable ``by_group`` sort provides, so
    spilled records keep memory flat. Statistics that cannot be computed are listed in
    ``problems`` (``<scope>: <statistic block>: <error>``) and left out.
    """

    def __init__(self, by_group: SortedSink) -> None:
        self._run = _Columns()
        self._rows = 0
        self._sizes: Counter[str] = Counter()
        self._by_group = by_group
        self.problems: list[str] = []

    def add(self, group: str, record: dict[str, Any] | None) -> None:
        self._rows += 1
        self._sizes[group] += 1
        if isinstance(record, dict):
            self._run.add(record)
        self._by_group.add(group, record)

    def document(self) -> dict[str, Any]:
        """``{"run": summary, "groups": {group: summary}}``, groups in sorted order."""
        groups: dict[str, Any] = {}
        for name, items in itertools.groupby(self._by_group.items(), key=operator.itemgetter(0)):
            groups[name] = self._summary(f"group {name!r}", (record for _, record in items), self._sizes[name])
        return {"run": self._summary("run", [], self._rows, self._run), "groups": groups}

    def _summary(self, scope: str, records: Iterable[Any], total: int, columns: _Columns | None = None) -> dict[str, Any] | None:
        problems: list[str] = []
        summary = compute_perf_summary(records, total, problems, columns)
        self.problems.extend(f"{scope}: {problem}" for problem in problems)
        return summary
