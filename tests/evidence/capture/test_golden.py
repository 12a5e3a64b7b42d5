"""Golden collect cases as data for the capture merge and the observation join.

The goldens hold whole enriched rows; the later steps (projection, ng_perf) belong elsewhere,
so only ``ng_model_call_capture`` (payload keys are removed by the projection) and
``ng_agent_observations`` are compared here, and the projection's own failure gap is ignored.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from evidence.capture import merge_model_call_capture
from evidence.errors import RowRejected
from evidence.models.capture import PAYLOAD_KEYS
from tests.conformance.conftest import as_persisted, load_cases, strict_diff
from tests.conformance.test_collect_golden import lookup_from

NO_RESULT_CLASSES = {"agent_request_failed", "agent_run_error", "environment_server_failed"}
PROJECTION_FAILED = "trajectory_projection_failed"


def _redacted(container: Any) -> bool:
    return (
        isinstance(container, dict)
        and isinstance(container.get("gaps"), list)
        and any(isinstance(gap, dict) and gap.get("code") == "multimodal_history_redacted" for gap in container["gaps"])
    )


def include_payloads(row: dict[str, Any]) -> bool:
    return not (_redacted(row.get("ng_trajectory")) or _redacted(row.get("ng_agent_observations")))


def merged_row(case: dict[str, Any]) -> dict[str, Any]:
    """The case row after the merge, as the collection loop would run it."""
    row = copy.deepcopy(case["row"])
    no_result = row.get("_ng_failure_class") in NO_RESULT_CLASSES or bool(row.get("_ng_dispatch_drained"))
    if not no_result:
        merge_model_call_capture(row, lookup_from(case["capture_files"]), include_payloads=include_payloads(row))
    return row


def capture_view(capture: Any) -> Any:
    """``ng_model_call_capture`` without payload keys and without the projection's gap."""
    if not isinstance(capture, dict) or not isinstance(capture.get("calls"), list):
        return capture
    view = dict(capture)
    view["calls"] = [
        {key: value for key, value in call.items() if key not in PAYLOAD_KEYS} if isinstance(call, dict) else call
        for call in capture["calls"]
    ]
    if isinstance(capture.get("gaps"), list):
        view["gaps"] = [gap for gap in capture["gaps"] if not (isinstance(gap, dict) and gap.get("code") == PROJECTION_FAILED)]
        if not view["gaps"]:
            del view["gaps"]
    return view


def observations_view(bundle: Any) -> Any:
    """The bundle without the projection-failure gap the projection appends to raw bundles."""
    if not isinstance(bundle, dict) or not isinstance(bundle.get("gaps"), list):
        return bundle
    view = dict(bundle)
    view["gaps"] = [gap for gap in bundle["gaps"] if not (isinstance(gap, dict) and gap.get("code") == PROJECTION_FAILED)]
    return view


COLLECT = load_cases("collect")
IDS = [name for name, _ in COLLECT]


@pytest.mark.parametrize(("name", "case"), COLLECT, ids=IDS)
def test_capture_attachment_matches_golden(name: str, case: dict[str, Any]) -> None:
    row = merged_row(case)
    expected = case["expected_row"]
    assert ("ng_model_call_capture" in row) == ("ng_model_call_capture" in expected)
    got = as_persisted(capture_view(row.get("ng_model_call_capture")))
    assert strict_diff(got, capture_view(expected.get("ng_model_call_capture"))) is None


@pytest.mark.parametrize(("name", "case"), COLLECT, ids=IDS)
def test_joined_observations_match_golden(name: str, case: dict[str, Any]) -> None:
    row = merged_row(case)
    got = as_persisted(observations_view(row.get("ng_agent_observations")))
    assert strict_diff(got, observations_view(case["expected_row"].get("ng_agent_observations"))) is None


@pytest.mark.parametrize(("name", "case"), COLLECT, ids=IDS)
def test_merge_keeps_existing_key_positions(name: str, case: dict[str, Any]) -> None:
    before = list(case["row"])
    after = list(merged_row(case))
    assert after[: len(before)] == before
    assert after[len(before) :] in ([], ["ng_model_call_capture"])


# Case 9 fails in the no-result test, before the merge: not an identity rule.
MERGE_ERRORS = [(name, case) for name, case in load_cases("collect_errors") if not name.startswith("09_")]


@pytest.mark.parametrize(("name", "case"), MERGE_ERRORS, ids=[name for name, _ in MERGE_ERRORS])
def test_identity_errors_reject_the_row_unchanged(name: str, case: dict[str, Any]) -> None:
    row = copy.deepcopy(case["row"])
    with pytest.raises(RowRejected) as raised:
        merge_model_call_capture(row, lookup_from(case["capture_files"]), include_payloads=True)
    assert (raised.value.kind, raised.value.message) == (case["expected_error"]["type"], case["expected_error"]["message"])
    assert row == case["row"]
