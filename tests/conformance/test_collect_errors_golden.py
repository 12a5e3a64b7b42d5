"""Golden collect_errors cases: rows on which 0.7.0 raises are rejected, never collected.

The stage reports them (kind and message are 0.7.0's exception) and passes the row through
unchanged.
"""

from __future__ import annotations

from typing import Any

import pytest

from evidence.collect import collect_row
from tests.conformance.conftest import load_cases, strict_diff
from tests.conformance.test_collect_golden import lookup_from

CASES = load_cases("collect_errors")


@pytest.mark.parametrize(("name", "case"), CASES, ids=[name for name, _ in CASES])
def test_row_is_rejected_like_0_7_0(name: str, case: dict[str, Any]) -> None:
    collected = collect_row(case["row"], lookup_from(case["capture_files"]))

    assert collected.rejected is not None
    assert (collected.rejected.kind, collected.rejected.message) == (
        case["expected_error"]["type"],
        case["expected_error"]["message"],
    )
    assert collected.repaired is False
    assert strict_diff(collected.row, case["row"]) is None
