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


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [  # pandas 0.7.0's Series.quantile, printed with repr by hand
        ([-0.0], 0.5, "-0.0"),  # one value: taken on both sides with weight 1
        ([-9 * 10**18, 9 * 10**18], 0.5, "9.223372036854776e+18"),  # int64 wraps around
        ([-(2**63), 5], 0.5, "4.611686018427388e+18"),
        ([5, 579726522722501312], 0.5, "2.8986326136125075e+17"),  # int64: exact difference, then float
        ([2**63 + 5, 3, 2**53 + 1], 0.9, "7.38049906933477e+18"),  # uint64
        ([True, 2**53 + 1, 3], 0.5, "3.0"),  # objects
        ([-(2**63) - 1, 2**53 + 1], 0.5, "-4.6071824188000174e+18"),
        ([1, 2.5, 2**53 + 1], 0.5, "2.5"),  # float64
        ([-2.0, -1, 2**53 + 1, 2**63], 0.5, "4503599627370495.0"),  # objects: no 64-bit int type holds -1 and 2**63
    ],
)
def test_quantile_interpolates_in_the_dtype_pandas_gives_the_values(values: list[int | float], q: float, expected: str) -> None:
    assert repr(quantile(values, q)) == expected


def test_all_bool_num_turns_still_summarised() -> None:
    """Divergence: 0.7.0 raises TypeError (numpy cannot subtract booleans); we use 0.0/1.0."""
    summary = compute_perf_summary([{"num_turns": True}, {"num_turns": False}], 2)
    assert summary is not None
    assert summary["p90_num_turns"] == 0.9
    assert summary["min_num_turns"] is False
    assert summary["max_num_turns"] is True
