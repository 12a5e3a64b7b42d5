"""Golden collect cases as data for the capture merge and the observation join.

The goldens hold whole enriched rows; the later steps (projection, ng_perf) belong elsewhere,
so only ``ng_model_call_capture`` (payload keys are removed by the projection) and
``ng_agent_observations`` are compared here, and the projection's own failure gap is ignored.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

from evidence.capture import CaptureFiles, merge_model_call_capture
from evidence.errors import RowRejected
from evidence.models.capture import PAYLOAD_KEYS

CASES = Path(__file__).resolve().parents[1] / "conformance" / "cases"
NO_RESULT_CLASSES = {"agent_request_failed", "agent_run_error", "environment_server_failed"}
PROJECTION_FAILED = "trajectory_projection_failed"


def load_case(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def lookup_from(capture_files: dict[str, str]):
    """A CaptureLookup over the case's capture directory."""

    def lookup(rollout_id: str) -> CaptureFiles | None:
        jsonl = capture_files.get(f"{rollout_id}.capture.jsonl")
        incomplete = f"{rollout_id}.capture.incomplete" in capture_files
        if jsonl is None and not incomplete:
            return None
        return CaptureFiles(jsonl=None if jsonl is None else jsonl.encode("utf-8"), incomplete=incomplete)

    return lookup


def as_persisted(value: Any) -> Any:
    """What Gym's orjson writer leaves of a value: non-finite floats become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: as_persisted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_persisted(item) for item in value]
    return value


def typed(value: Any) -> Any:
    """A form where ``1``, ``1.0`` and ``True`` compare unequal."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    return (type(value).__name__, value)


def _redacted(container: Any) -> bool:
    return isinstance(container, dict) and isinstance(container.get("gaps"), list) and any(
        isinstance(gap, dict) and gap.get("code") == "multimodal_history_redacted" for gap in container["gaps"]
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


COLLECT = sorted((CASES / "collect").glob("*.json"))


@pytest.mark.parametrize("path", COLLECT, ids=[path.stem for path in COLLECT])
def test_capture_attachment_matches_golden(path: Path) -> None:
    case = load_case(path)
    row = merged_row(case)
    expected = case["expected_row"]
    assert ("ng_model_call_capture" in row) == ("ng_model_call_capture" in expected)
    got = typed(as_persisted(capture_view(row.get("ng_model_call_capture"))))
    assert got == typed(capture_view(expected.get("ng_model_call_capture")))


@pytest.mark.parametrize("path", COLLECT, ids=[path.stem for path in COLLECT])
def test_joined_observations_match_golden(path: Path) -> None:
    case = load_case(path)
    row = merged_row(case)
    expected = case["expected_row"]
    got = typed(as_persisted(observations_view(row.get("ng_agent_observations"))))
    assert got == typed(observations_view(expected.get("ng_agent_observations")))


@pytest.mark.parametrize("path", COLLECT, ids=[path.stem for path in COLLECT])
def test_merge_keeps_existing_key_positions(path: Path) -> None:
    case = load_case(path)
    before = list(case["row"])
    after = list(merged_row(case))
    assert after[: len(before)] == before
    assert after[len(before) :] in ([], ["ng_model_call_capture"])


ERRORS = sorted((CASES / "collect_errors").glob("*.json"))
MERGE_ERRORS = [path for path in ERRORS if not isinstance(load_case(path)["row"].get("_ng_failure_class"), list)]


@pytest.mark.parametrize("path", MERGE_ERRORS, ids=[path.stem for path in MERGE_ERRORS])
def test_identity_errors_reject_the_row_unchanged(path: Path) -> None:
    case = load_case(path)
    row = copy.deepcopy(case["row"])
    with pytest.raises(RowRejected) as raised:
        merge_model_call_capture(row, lookup_from(case["capture_files"]), include_payloads=True)
    assert (raised.value.kind, raised.value.message) == (case["expected_error"]["type"], case["expected_error"]["message"])
    assert row == case["row"]
