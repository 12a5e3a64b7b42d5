"""Golden ``perf_summary`` cases (0.7.0 outputs), compared with strict types (1 != 1.0 != True)."""

from __future__ import annotations

from typing import Any

import pytest

from evidence.perf_summary import compute_perf_summary
from tests.conformance.conftest import load_cases, strict_diff

CASES = load_cases("perf_summary")


@pytest.mark.parametrize(("name", "case"), CASES, ids=[name for name, _ in CASES])
def test_perf_summary_matches_golden(name: str, case: dict[str, Any]) -> None:
    actual = compute_perf_summary(case["ng_perf_records"], case["total_rollouts"])
    assert strict_diff(actual, case["expected"]) is None
    if actual is not None:
        assert list(actual) == list(case["expected"]), "key order is part of the file format"
