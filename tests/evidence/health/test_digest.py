"""Row evaluation and digests: what the per-attempt task computes and stores."""

from __future__ import annotations

import copy
import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evidence.health import (
    HealthFold,
    RowDigest,
    digest_lines,
    evaluate_row,
    health_check_bytes,
    identity_sizes,
    reduce_digests,
    unreadable_row,
)
from evidence.health.calls import has_tool_call, nonempty, response_has_content
from tests.conformance.conftest import load_cases

CASES = load_cases("health")
HEALTHY = json.loads(dict(CASES)["01_healthy_single"]["rollouts_jsonl"])


def _healthy(**fields: Any) -> dict[str, Any]:
    row = copy.deepcopy(HEALTHY)
    row.update(fields)
    return row


@pytest.mark.parametrize(("name", "case"), CASES, ids=[name for name, _ in CASES])
def test_digests_round_trip_through_json(name: str, case: dict[str, Any]) -> None:
    for digest in digest_lines(case["rollouts_jsonl"].encode(), source="f", ignored=()):
        assert RowDigest.from_json(orjson.loads(orjson.dumps(digest.to_json()))) == digest


def test_stage_rows_evaluate_like_drop_in_lines() -> None:
    """The stage passes already-parsed rows; the result equals reading the same line."""
    text = dict(CASES)["41_multi_repeat_mixed_realistic"]["rollouts_jsonl"]
    from_lines = list(digest_lines(text.encode(), source="f", ignored=()))
    from_rows = [evaluate_row(json.loads(line), source="f", line=i + 1, ordinal=i, ignored=()) for i, line in enumerate(text.splitlines())]
    assert from_rows == from_lines


def test_missing_task_index_falls_back_to_ordinal() -> None:
    row = _healthy()
    del row["_ng_task_index"], row["_ng_rollout_index"]
    row["ng_trajectory"]["rollout_id"] = ""
    for turn in row["ng_trajectory"]["turns"]:
        turn["rollout_id"] = ""
    digest = evaluate_row(row, source="f", line=9, ordinal=4, ignored=())
    assert (digest.task, digest.rollout, digest.rollout_id) == (4, 0, "4-0")


def test_non_object_value_is_unreadable_with_value_error() -> None:
    assert evaluate_row([1], source="f", line=2, ordinal=0, ignored=()) == unreadable_row("f", 2, "ValueError", ignored=())


def test_crashing_check_becomes_check_execution_error() -> None:
    row = _healthy()
    call = row["ng_trajectory"]["model_calls"][0]
    call["response_metadata"]["finish_reason"] = "length"
    call["response"] = {"choices": [{"message": "not-an-object"}]}
    digest = evaluate_row(row, source="f", line=1, ordinal=0, ignored=())
    assert digest.findings == (
        {
            "check": "check_execution_error",
            "detail": {
                "reason": "check raised an unexpected exception",
                "failed_check": "model_call_runaway_generation",
                "error": "AttributeError",
            },
        },
    )
    assert digest.unobserved == ("model_call_runaway_generation",)


def test_verdict_follows_findings_then_unobserved() -> None:
    healthy = evaluate_row(_healthy(), source="f", line=1, ordinal=0, ignored=())
    no_trajectory = evaluate_row(_healthy(ng_trajectory=None), source="f", line=2, ordinal=1, ignored=())
    assert (healthy.verdict, no_trajectory.verdict) == ("healthy", "unobserved")
    assert no_trajectory.stats.transcript_prompt == 3
    assert not no_trajectory.stats.capture_observed
    fold = HealthFold((), identity_sizes([healthy, healthy]))
    assert [fold.add(healthy).verdict, fold.add(healthy).verdict] == ["unhealthy", "unhealthy"]
    assert fold.summary()["run"]["verdicts"] == {"healthy": 0, "unhealthy": 2, "unobserved": 0}


def test_content_predicates() -> None:
    assert nonempty({"content": [{"text": " x "}]})
    assert not nonempty({"content": [{"text": "  "}]})
    assert not nonempty(0)
    assert not nonempty({"unknown": "text"})
    assert has_tool_call([{"type": "function_call"}])
    assert has_tool_call({"tool_calls": [{}]})
    assert not response_has_content({"output": [], "incomplete_details": {"reason": "max"}})
    assert response_has_content({"choices": [{"message": {"content": "kept"}}]})
    with pytest.raises(AttributeError):
        response_has_content({"output_text": "present", "choices": [{"message": "oops"}]})


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)
CALL_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "model_call_id": st.none() | st.sampled_from(["c1", "c2", ""]),
        "started_at": st.none() | st.floats(allow_nan=False, allow_infinity=False, min_value=0, max_value=9),
        "response": JSON,
        "response_metadata": st.fixed_dictionaries(
            {},
            optional={
                "response_id": st.none() | st.sampled_from(["r1", "r2"]),
                "model_ref": st.none() | st.just({"type": "responses_api_models", "name": "p"}),
                "status_code": st.none() | st.integers(100, 600),
                "response_status": st.none() | st.sampled_from(["failed", "completed"]),
                "finish_reason": st.none() | st.sampled_from(["length", "stop"]),
                "error_category": st.none() | st.text(max_size=3),
            },
        ),
        "token_stats": st.fixed_dictionaries(
            {},
            optional={
                "prompt_tokens": st.none() | st.integers(0, 9),
                "completion_tokens": st.none() | st.integers(0, 9),
            },
        ),
    },
)


@settings(max_examples=200, deadline=None)
@given(value=JSON)
def test_any_json_value_gives_a_digest(value: Any) -> None:
    digest = evaluate_row(value, source="f", line=1, ordinal=0, ignored=())
    assert RowDigest.from_json(digest.to_json()) == digest


@settings(max_examples=300, deadline=None)
@given(calls=st.lists(CALL_FIELDS, max_size=4), answer=JSON, usage=JSON)
def test_any_valid_trajectory_gives_a_digest(calls: list[dict[str, Any]], answer: Any, usage: Any) -> None:
    row = _healthy(response={"usage": usage})
    row["ng_trajectory"]["model_calls"] = calls
    row["ng_trajectory"]["turns"][0]["answer"] = answer
    digest = evaluate_row(row, source="f", line=1, ordinal=0, ignored=())
    assert reduce_digests([digest], ()).verdicts_text().count("\n") == 1


@pytest.mark.parametrize(("response_id", "replayed"), [("", 0), ("r", 1)])
def test_an_empty_response_id_is_no_call_identity(response_id: str, replayed: int) -> None:
    """Two calls without a call id count as one replayed only when their response id is non-empty."""
    calls = [{"response_metadata": {"response_id": response_id}}] * 2
    trajectory = {
        "schema_version": "1.0",
        "task_id": "0",
        "rollout_id": "0-0",
        "invocations": [],
        "turns": [],
        "model_calls": calls,
        "tool_calls": [],
        "gaps": [],
    }
    line = orjson.dumps({"_ng_task_index": 0, "_ng_rollout_index": 0, "ng_trajectory": trajectory}) + b"\n"
    summary = json.loads(health_check_bytes(line, rollouts_path="r.jsonl", output_dir="out").quality_summary)
    assert summary["run"]["stats"]["duplicated_calls"]["replayed"] == replayed
