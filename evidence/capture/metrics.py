"""``ng_model_call_capture.metrics``: totals over the readable calls (spec: collection.md §5.4)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evidence.models.capture import ModelCallRecord

__all__ = ["aggregate_metrics"]

_SUMMED_FIELDS = ("tokens_in", "tokens_out", "tokens_reasoning", "tokens_total", "cached_tokens", "latency_total_ms")


def _sum_known(values: list[Any]) -> Any:
    """Sum of the non-null values; null when none is known (null = unknown, 0 = a real zero).

    Plain Python arithmetic: integer totals may exceed 64 bits and inf/NaN propagate.
    """
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def aggregate_metrics(records: Sequence[ModelCallRecord]) -> dict[str, Any]:
    """Metrics in 0.7.0's key order; ``num_calls`` counts readable calls only."""
    metrics = {name: _sum_known([getattr(record, name) for record in records]) for name in _SUMMED_FIELDS}
    metrics["num_calls"] = len(records)
    return metrics
