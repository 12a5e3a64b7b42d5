"""perf_summary rules beyond the golden cases, and our one divergence from 0.7.0."""

from __future__ import annotations

import pytest

from evidence.perf_summary import compute_perf_summary, quantile


def test_non_object_values_count_only_in_the_denominator() -> None:
    summary = compute_perf_summary([{"num_turns": 2}, None, "x", [1]], 4)
    assert summary is not None
    assert summary["overall_observability_coverage"] == 0.25


def test_only_non_objects_gives_no_summary() -> None:
    assert compute_perf_summary([None, 3], 2) is None


def test_float_totals_use_naive_left_to_right_addition() -> None:
    values = [1e16, 1.0, -1e16]
    summary = compute_perf_summary([{"prompt_tokens": v} for v in values], 3)
    assert summary is not None
    assert summary["total_prompt_tokens"] == (1e16 + 1.0) + -1e16 == 0.0


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [([1, 2, 3, 4], 0.5, 2.5), ([10, 1010], 0.99, 1000.0), ([7], 0.9, 7.0), ([3, 1, 2], 0.9, 2.8)],
)
def test_quantile_is_numpy_linear(values: list[int], q: float, expected: float) -> None:
    assert quantile(values, q) == pytest.approx(expected, abs=1e-12)
    assert type(quantile(values, q)) is float


def test_all_bool_num_turns_still_summarised() -> None:
    """Divergence: 0.7.0 raises TypeError (numpy cannot subtract booleans); we use 0.0/1.0."""
    summary = compute_perf_summary([{"num_turns": True}, {"num_turns": False}], 2)
    assert summary is not None
    assert summary["p90_num_turns"] == 0.9
    assert summary["min_num_turns"] is False and summary["max_num_turns"] is True
