"""ng_model_call_capture: gaps, metrics, shape and preconditions (collection.md §5)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evidence.capture import CaptureFiles, merge_model_call_capture
from evidence.errors import RowRejected

GOOD = json.dumps(
    {"model_call_id": "a", "response": {"usage": {"input_tokens": 2, "output_tokens": 1}}, "latency_ms": 1.5, "request": {"model": "m"}}
).encode()
OTHER = json.dumps({"model_call_id": "b", "response": {"usage": {"input_tokens": 3}}, "latency_ms": 2}).encode()


def merged(files: CaptureFiles | None, *, include_payloads: bool = True, **extra: Any) -> dict[str, Any]:
    row = {"_ng_task_index": 0, "_ng_rollout_index": 1, **extra}
    merge_model_call_capture(row, lambda rollout_id: files if rollout_id == "0-1" else None, include_payloads=include_payloads)
    return row


@pytest.mark.parametrize(
    ("files", "gaps"),
    [
        (None, [{"code": "model_call_capture_no_records"}]),
        (CaptureFiles(jsonl=None, incomplete=True), [{"code": "model_call_capture_incomplete"}]),
        (CaptureFiles(jsonl=GOOD, incomplete=True), [{"code": "model_call_capture_incomplete"}]),
        (
            CaptureFiles(jsonl=GOOD + b"\n{x\n" + GOOD, incomplete=True),
            [{"code": "model_call_capture_records_unreadable", "detail": "count=1"}, {"code": "model_call_capture_incomplete"}],
        ),
        (CaptureFiles(jsonl=b"[]\nnull\n", incomplete=False), [{"code": "model_call_capture_records_unreadable", "detail": "count=2"}]),
        (CaptureFiles(jsonl=b"\n  \n", incomplete=False), [{"code": "model_call_capture_no_records"}]),
        (CaptureFiles(jsonl=GOOD, incomplete=True, unreadable=True), [{"code": "model_call_capture_unreadable"}]),
        (CaptureFiles(jsonl=GOOD, incomplete=False), None),
    ],
)
def test_capture_gaps_in_emission_order(files: CaptureFiles | None, gaps: list[dict[str, Any]] | None) -> None:
    capture = merged(files)["ng_model_call_capture"]
    assert capture.get("gaps") == gaps
    assert list(capture) == ["rollout_id", "metrics", "calls"] + (["gaps"] if gaps else [])


def test_unreadable_file_has_no_calls() -> None:
    capture = merged(CaptureFiles(jsonl=GOOD, incomplete=False, unreadable=True))["ng_model_call_capture"]
    assert capture["calls"] == []
    assert capture["metrics"]["num_calls"] == 0


def test_metrics_sum_known_values_and_keep_unknown_null() -> None:
    metrics = merged(CaptureFiles(jsonl=GOOD + b"\n" + OTHER, incomplete=False))["ng_model_call_capture"]["metrics"]
    assert metrics == {
        "tokens_in": 5,
        "tokens_out": 1,
        "tokens_reasoning": None,
        "tokens_total": 3,
        "cached_tokens": None,
        "latency_total_ms": 3.5,
        "num_calls": 2,
    }
    assert list(metrics) == [
        "tokens_in",
        "tokens_out",
        "tokens_reasoning",
        "tokens_total",
        "cached_tokens",
        "latency_total_ms",
        "num_calls",
    ]


def test_metrics_integer_sums_are_unbounded() -> None:
    big = json.dumps({"response": {"usage": {"input_tokens": 2**64 - 1}}}).encode()
    metrics = merged(CaptureFiles(jsonl=big + b"\n" + big, incomplete=False))["ng_model_call_capture"]["metrics"]
    assert metrics["tokens_in"] == 2 * (2**64 - 1)


def test_empty_capture_metrics_are_null_with_zero_calls() -> None:
    metrics = merged(None)["ng_model_call_capture"]["metrics"]
    assert metrics["num_calls"] == 0
    assert metrics["tokens_in"] is None
    assert metrics["latency_total_ms"] is None


@pytest.mark.parametrize("include_payloads", [True, False])
def test_payload_keys_follow_include_payloads(include_payloads: bool) -> None:
    call = merged(CaptureFiles(jsonl=GOOD, incomplete=False), include_payloads=include_payloads)["ng_model_call_capture"]["calls"][0]
    assert ("request" in call) is include_payloads
    assert ("response_raw" in call) is include_payloads


def test_existing_attachment_is_replaced_in_place() -> None:
    row = merged(None, ng_model_call_capture={"stale": True}, reward=1.0)
    assert list(row) == ["_ng_task_index", "_ng_rollout_index", "ng_model_call_capture", "reward"]
    assert row["ng_model_call_capture"]["rollout_id"] == "0-1"


def test_row_without_rollout_id_is_untouched() -> None:
    row = {"_ng_task_index": 0, "ng_agent_observations": {"broken": True}}
    merge_model_call_capture(row, lambda rollout_id: pytest.fail("looked up"), include_payloads=True)
    assert row == {"_ng_task_index": 0, "ng_agent_observations": {"broken": True}}


def test_invalid_file_id_rejects_before_lookup() -> None:
    row = {"_ng_task_index": "a b", "_ng_rollout_index": 0}
    with pytest.raises(RowRejected, match="Invalid rollout id: 'a b-0'"):
        merge_model_call_capture(row, lambda rollout_id: pytest.fail("looked up"), include_payloads=True)
    assert row == {"_ng_task_index": "a b", "_ng_rollout_index": 0}


# Rollout ids whose capture file (14-character suffix) or marker (19) passes the 255-byte file
# name limit, each answered as 0.7.0 answered it on local disk (checked against the release).
@pytest.mark.parametrize(
    ("length", "files", "outcome"),
    [
        (242, None, "OSError: [Errno 36] File name too long: '{id}.capture.jsonl'"),
        (242, CaptureFiles(jsonl=GOOD, incomplete=False), "OSError: [Errno 36] File name too long: '{id}.capture.jsonl'"),
        (241, None, "OSError: [Errno 36] File name too long: '{id}.capture.incomplete'"),
        (237, CaptureFiles(jsonl=None, incomplete=True), "OSError: [Errno 36] File name too long: '{id}.capture.incomplete'"),
        (241, CaptureFiles(jsonl=GOOD, incomplete=False), [{"code": "model_call_capture_unreadable"}]),
        (
            237,
            CaptureFiles(jsonl=b"{x\n" + GOOD, incomplete=False),
            [{"code": "model_call_capture_records_unreadable", "detail": "count=1"}, {"code": "model_call_capture_unreadable"}],
        ),
        (237, CaptureFiles(jsonl=GOOD, incomplete=False, unreadable=True), [{"code": "model_call_capture_unreadable"}]),
        (236, None, [{"code": "model_call_capture_no_records"}]),
    ],
)
def test_names_past_the_file_name_limit_fail_where_0_7_0_checks_them(length: int, files: CaptureFiles | None, outcome: Any) -> None:
    """The capture file's name is checked first, the marker's only when no capture file was
    found; past the limit a check before reading rejects the row, the marker's check after
    reading makes the capture unreadable (its calls dropped)."""
    rollout_id = "r" * length
    row = {"_ng_rollout_id": rollout_id, "_ng_task_index": 0, "_ng_rollout_index": 0}
    if isinstance(outcome, str):
        with pytest.raises(RowRejected) as raised:
            merge_model_call_capture(row, lambda _: files, include_payloads=True)
        assert f"{raised.value.kind}: {raised.value.message}" == outcome.format(id=rollout_id)
        assert "ng_model_call_capture" not in row
    else:
        merge_model_call_capture(row, lambda _: files, include_payloads=True)
        assert row["ng_model_call_capture"].get("gaps") == outcome
        assert row["ng_model_call_capture"]["calls"] == []


def test_invalid_bundle_is_kept_raw_with_a_join_gap() -> None:
    raw = {"source": "x", "records": [{"kind": "agent_invocation", "invocation_id": "a", "surprise": 1}]}
    row = merged(CaptureFiles(jsonl=b"{x\n", incomplete=False), ng_agent_observations=raw)
    assert row["ng_agent_observations"] is raw
    assert row["ng_model_call_capture"]["gaps"] == [
        {"code": "model_call_capture_records_unreadable", "detail": "count=1"},
        {"code": "agent_observation_join_failed"},
    ]


def test_null_observations_are_not_joined() -> None:
    row = merged(None, ng_agent_observations=None)
    assert row["ng_agent_observations"] is None
    assert row["ng_model_call_capture"]["gaps"] == [{"code": "model_call_capture_no_records"}]
