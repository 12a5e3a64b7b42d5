"""One "successful model call" (health_perf §3.5), read the same by health and the capability matrix."""

from __future__ import annotations

from typing import Any

import pytest

from evidence.capabilities.dimensions import MEASURES
from evidence.capabilities.rollout import RolloutEvidence
from evidence.health.calls import CallView, call_failed, call_successful

# (status_code, error_category, response_status) -> (failed, successful)
CASES = [
    ((200, None, "completed"), (False, True)),
    ((None, None, None), (False, True)),
    ((399, None, None), (False, True)),
    ((400, None, None), (True, False)),
    ((150, None, None), (False, False)),
    ((200, "rate_limit", None), (True, False)),
    ((200, "", None), (False, True)),
    ((200, None, "failed"), (True, False)),
    ((200, None, "cancelled"), (True, False)),
    ((200.0, None, None), (False, False)),
    ((True, None, None), (False, False)),
    ((200, None, ["failed"]), (False, True)),
    ((200, None, {"status": "error"}), (False, True)),
]


@pytest.mark.parametrize(("metadata", "expected"), CASES)
def test_failed_and_successful(metadata: tuple[Any, Any, Any], expected: tuple[bool, bool]) -> None:
    assert (call_failed(*metadata), call_successful(*metadata)) == expected


@pytest.mark.parametrize(("metadata", "expected"), CASES)
def test_health_call_view_uses_the_rule(metadata: tuple[Any, Any, Any], expected: tuple[bool, bool]) -> None:
    status_code, error_category, response_status = metadata
    meta = {"status_code": status_code, "error_category": error_category, "response_status": response_status}
    view = CallView.from_canonical(0, {"response_metadata": meta})
    assert (view.failed, view.successful) == expected


@pytest.mark.parametrize(("metadata", "expected"), CASES)
def test_token_count_dimension_owes_counts_only_for_successful_calls(metadata: tuple[Any, Any, Any], expected: tuple[bool, bool]) -> None:
    status_code, error_category, response_status = metadata
    meta = {"status_code": status_code, "error_category": error_category, "response_status": response_status}
    counted = {"response_metadata": {}, "token_stats": {"prompt_tokens": 1, "completion_tokens": 1}}
    uncounted = {"response_metadata": meta, "token_stats": {}}
    evidence = RolloutEvidence(
        trajectory={},
        invocations=[],
        turns=[],
        calls=[],
        owned_calls=[counted, uncounted],
        invocations_owning_calls=frozenset(),
        tool_records=[],
        requested_tool_call_ids=frozenset(),
        requested_tool_calls_without_id=0,
        captured_call_count=0,
        sandbox_records=[],
        gap_codes=frozenset(),
        rebuilt_turns=[],
    )
    measure, _ = MEASURES["token_counts"]
    outcome = measure(evidence)
    successful = expected[1]
    assert outcome.complete is not successful
