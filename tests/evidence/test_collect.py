"""Unit and property tests of the per-row collection sequence (collection.md §1, §11)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evidence.capture import CaptureFiles
from evidence.collect import collect_row
from evidence.projection import attach_trajectory
from tests.conformance.conftest import as_persisted, load_cases, strict_diff
from tests.conformance.test_collect_golden import lookup_from

LINE = (
    b'{"model_call_id":"c1","dialect":"responses","model_ref":{"type":"responses_api_models","name":"p"},'
    b'"started_at":1.0,"completed_at":2.0,"latency_ms":5.0,"status_code":200,'
    b'"request":{"input":"q"},"response":{"id":"r1","output":[]}}\n'
)
ROW = {"_ng_task_index": 0, "_ng_rollout_index": 0}


def with_capture(rollout_id: str) -> CaptureFiles | None:
    return CaptureFiles(jsonl=LINE, incomplete=False) if rollout_id == "0-0" else None


def no_capture(rollout_id: str) -> CaptureFiles | None:
    return None


@pytest.mark.parametrize("failure_class", ["agent_request_failed", "agent_run_error", "environment_server_failed"])
def test_no_result_rows_are_not_merged(failure_class: str) -> None:
    row = {**ROW, "_ng_failure_class": failure_class}

    collected = collect_row(row, with_capture)

    assert collected.row == row
    assert collected.rejected is None


def test_a_drained_row_is_no_result_whatever_its_class() -> None:
    row = {**ROW, "_ng_failure_class": "cancelled", "_ng_dispatch_drained": True}

    assert collect_row(row, with_capture).row == row


def test_other_failure_classes_are_merged_and_projected() -> None:
    collected = collect_row({**ROW, "_ng_failure_class": "timeout_exceeded"}, with_capture)

    assert collected.row["ng_model_call_capture"]["metrics"]["num_calls"] == 1
    assert collected.row["ng_trajectory"]["model_calls"][0]["model_call_id"] == "c1"


@pytest.mark.parametrize(("value", "kind"), [(["a"], "list"), ({"a": 1}, "dict")])
def test_an_unhashable_failure_class_is_rejected_with_0_7_0s_message(value: Any, kind: str) -> None:
    row = {**ROW, "_ng_failure_class": value, "_ng_dispatch_drained": True}

    collected = collect_row(row, with_capture)

    assert collected.rejected is not None
    assert (collected.rejected.kind, collected.rejected.message) == ("TypeError", f"unhashable type: '{kind}'")
    assert collected.row is row


@pytest.mark.parametrize(("latency", "expected"), [(7, 7), (2.5, 2.5), (True, None), ("9", None)])
def test_rollout_latency_comes_from_the_persisted_perf_and_excludes_bools(latency: Any, expected: Any) -> None:
    row = {
        **ROW,
        "ng_perf": {"total_latency_ms": latency},
        "ng_agent_observations": {"source": "x", "records": [{"kind": "agent_invocation", "invocation_id": "root"}]},
    }

    perf = collect_row(row, with_capture).row["ng_perf"]

    assert strict_diff(perf.get("total_latency_ms"), expected) is None


def test_multimodal_redaction_keeps_payloads_out_of_the_capture_and_the_trajectory() -> None:
    row = {**ROW, "ng_agent_observations": {"source": "x", "gaps": [{"code": "multimodal_history_redacted"}]}}

    out = collect_row(row, with_capture).row

    assert "request" not in out["ng_model_call_capture"]["calls"][0]
    assert out["ng_trajectory"]["model_calls"][0]["request"] is None


def test_a_capture_that_appeared_after_a_no_records_collection_is_a_repair() -> None:
    first = collect_row(dict(ROW), no_capture)
    assert first.repaired is False
    assert first.row["ng_model_call_capture"]["gaps"] == [{"code": "model_call_capture_no_records"}]

    second = collect_row(first.row, with_capture)

    assert second.repaired is True
    assert collect_row(first.row, no_capture).repaired is False


# --- properties -----------------------------------------------------------------------------

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=12,
)
FIELD_NAMES = st.sampled_from(
    [
        "model_call_id",
        "response_id",
        "model_ref",
        "request",
        "response",
        "response_raw",
        "started_at",
        "latency_total_ms",
        "tokens_in",
        "kind",
        "invocation_id",
        "model_calls",
        "conversation",
        "records",
        "source",
        "gaps",
        "calls",
        "turns",
        "invocations",
        "task_id",
        "rollout_id",
        "code",
        "choices",
        "output",
    ]
)
SHAPED = st.recursive(
    JSONISH,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(FIELD_NAMES, children, max_size=5),
    max_leaves=25,
)
EVIDENCE_ROWS = st.fixed_dictionaries(
    {},
    optional={
        "_ng_task_index": st.integers(-2, 3) | st.none(),
        "_ng_rollout_index": st.integers(0, 3) | st.none(),
        "task_id": JSONISH,
        "resolved": JSONISH,
        "ng_trajectory": SHAPED,
        "ng_agent_observations": SHAPED,
        "ng_model_call_capture": SHAPED,
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EVIDENCE_ROWS)
def test_projection_never_raises_on_arbitrary_rows(row: dict[str, Any]) -> None:
    before = copy.deepcopy(row)
    result = dict(row)

    attach_trajectory(row, result)

    assert strict_diff(row, before) is None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EVIDENCE_ROWS)
def test_collect_never_raises_without_capture(row: dict[str, Any]) -> None:
    collected = collect_row(row, no_capture)

    assert collected.rejected is None


def _idempotent(output: dict[str, Any]) -> bool:
    """Where §11's idempotence holds for 0.7.0.

    The projection must have succeeded, every capture call must have an id (a call without
    ``model_call_id`` cannot merge with its earlier projection, so it is appended again) and the
    synthesized turns must already be in timestamp order (synthesized turns are not sorted,
    producer turns are). A compaction's ``model_call_ownership_unavailable`` survives the join's
    gap cleaning (§6.4) and so moves ahead of the re-emitted join gaps.
    """
    trajectory = output.get("ng_trajectory")
    if not isinstance(trajectory, dict):
        return False
    calls = (output.get("ng_model_call_capture") or {}).get("calls") or []
    turns = [(turn["timestamp"], turn["invocation_id"], turn["turn_no"]) for turn in trajectory["turns"]]
    observations = output.get("ng_agent_observations")
    observed_gaps = observations.get("gaps") or [] if isinstance(observations, dict) else []
    return (
        not any(gap.get("code") == "model_call_ownership_unavailable" and gap.get("invocation_id") is not None for gap in observed_gaps)
        and all(isinstance(call, dict) and call.get("model_call_id") for call in calls)
        and turns == sorted(turns)
        and not any(gap["code"] == "trajectory_projection_failed" for gap in trajectory["gaps"])
    )


GOLDEN = load_cases("collect")


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(GOLDEN), st.booleans())
def test_recollecting_a_collected_row_changes_nothing(named_case: tuple[str, dict[str, Any]], reverse: bool) -> None:
    _, case = named_case
    files = dict(case["capture_files"])
    if reverse:  # another capture content: the lines in reverse order
        files = {name: "".join(reversed(text.splitlines(keepends=True))) for name, text in files.items()}
    lookup = lookup_from(files)
    once = collect_row(copy.deepcopy(case["row"]), lookup).row

    twice = collect_row(copy.deepcopy(once), lookup).row

    if _idempotent(once):
        assert strict_diff(twice, once) is None


EDGES = json.loads((Path(__file__).parents[1] / "data" / "collection_edges_0_7_0.json").read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("name", EDGES)
def test_edge_rows_are_collected_as_0_7_0_collects_them(name: str) -> None:
    case = EDGES[name]
    lookup = lookup_from(case["capture_files"])

    collected = [as_persisted(collect_row(copy.deepcopy(row), lookup).row) for row in case["rows"]]

    for row, expected in zip(collected, case["expected_rows"], strict=True):
        assert strict_diff(row, expected) is None
        assert json.dumps(row) == json.dumps(expected)
