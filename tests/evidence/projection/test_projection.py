"""Unit tests of the ng_trajectory projection (collection.md §8), on small hand-built rows."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from evidence.projection import attach_trajectory, build_trajectory
from evidence.projection.attach import trajectory_json
from evidence.projection.turns import turn_content

ROW = {"_ng_task_index": 3, "_ng_rollout_index": 1}
REF = {"type": "responses_api_models", "name": "policy"}


def capture_call(call_id: str | None, **fields: Any) -> dict[str, Any]:
    call = {
        "model_call_id": call_id,
        "response_id": f"resp-{call_id}",
        "model_ref": REF,
        "started_at": 10.0,
        "completed_at": 11.0,
        "latency_total_ms": 1000.0,
        "tokens_in": 5,
        "tokens_out": 2,
        "request": {"input": [{"role": "user", "content": "q"}]},
        "response": {"status": "completed", "output": [{"type": "message", "content": "a"}]},
    }
    call.update(fields)
    return call


def invocation(invocation_id: str, *call_ids: str, conversation: list[Any] | None = None) -> dict[str, Any]:
    return {
        "kind": "agent_invocation",
        "invocation_id": invocation_id,
        "model_calls": [{"model_call_id": call_id} for call_id in call_ids],
        "conversation": conversation or [],
    }


def codes(record: Any) -> list[str]:
    return [gap.code for gap in record.gaps]


def test_capture_only_row_gets_calls_and_the_three_missing_evidence_gaps() -> None:
    result = {**ROW, "ng_model_call_capture": {"calls": [capture_call("c1")]}}

    record = build_trajectory(ROW, result)

    assert (record.task_id, record.rollout_id) == ("3", "3-1")
    assert [call.model_call_id for call in record.model_calls] == ["c1"]
    assert record.model_calls[0].token_stats.prompt_tokens == 5
    assert record.model_calls[0].response_metadata.response_status == "completed"
    assert codes(record) == ["turns_unavailable", "conversation_unavailable"]


def test_turns_are_synthesized_per_invocation_with_step_counts_and_resolved_on_the_last() -> None:
    tool_response = {"output": [{"type": "function_call", "name": "f"}, {"type": "reasoning", "summary": []}]}
    result = {
        **ROW,
        "resolved": True,
        "ng_agent_observations": {"source": "x", "records": [invocation("root", "c1", "c2")]},
        "ng_model_call_capture": {"calls": [capture_call("c1", response=tool_response), capture_call("c2")]},
    }

    record = build_trajectory(ROW, result)

    assert [(t.turn_no, t.step_count, t.resolved) for t in record.turns] == [(1, 0, None), (2, 1, True)]
    assert record.turns[0].reasoning_content == [{"type": "reasoning", "summary": []}]
    assert record.turns[0].question == [{"type": "message", "role": "user", "content": "q"}]


def test_an_int_resolved_is_not_a_verdict() -> None:
    result = {
        **ROW,
        "resolved": 1,
        "ng_agent_observations": {"source": "x", "records": [invocation("root", "c1")]},
        "ng_model_call_capture": {"calls": [capture_call("c1")]},
    }

    assert build_trajectory(ROW, result).turns[0].resolved is None


def test_producer_identity_mismatch_rewrites_turns_and_is_reported_first() -> None:
    producer = {
        "task_id": "other",
        "rollout_id": "3-1",
        "invocations": [invocation("root")],
        "turns": [
            {"invocation_id": "root", "task_id": "other", "rollout_id": "3-1", "turn_no": 2, "timestamp": 5.0, "step_count": 0},
            {"invocation_id": "root", "task_id": "other", "rollout_id": "3-1", "turn_no": 1, "timestamp": 9.0, "step_count": 0},
        ],
        "gaps": [{"code": "producer_gap"}],
    }

    record = build_trajectory(ROW, {**ROW, "ng_trajectory": producer})

    assert codes(record)[:2] == ["producer_trajectory_identity_mismatch", "producer_gap"]
    assert record.gaps[0].detail == "task_id"
    assert [(t.task_id, t.turn_no) for t in record.turns] == [("3", 2), ("3", 1)]
    assert "turns_unavailable" not in codes(record)


def test_an_invalid_producer_is_reported_and_blocks_turn_synthesis() -> None:
    result = {
        **ROW,
        "ng_trajectory": {"task_id": "3", "rollout_id": "3-1", "unknown": 1},
        "ng_agent_observations": {"source": "x", "records": [invocation("root", "c1")]},
        "ng_model_call_capture": {"calls": [capture_call("c1")]},
    }

    record = build_trajectory(ROW, result)

    assert record.gaps[0].code == "producer_trajectory_invalid"
    assert record.gaps[0].detail == "ValidationError"
    assert record.turns == []
    assert "turns_unavailable" in codes(record)


def test_capture_calls_merge_into_producer_calls_by_id_and_the_capture_wins() -> None:
    producer = {
        "task_id": "3",
        "rollout_id": "3-1",
        "model_calls": [
            {"model_call_id": "c1", "response_metadata": {"finish_reason": "mine", "model": "old"}, "duration_ms": 1.0},
            {"model_call_id": "only-producer"},
        ],
    }
    result = {
        **ROW,
        "ng_trajectory": producer,
        "ng_model_call_capture": {"calls": [capture_call("c1", model="new"), capture_call("c9")]},
    }

    record = build_trajectory(ROW, result)

    assert [call.model_call_id for call in record.model_calls] == ["c1", "only-producer", "c9"]
    merged = record.model_calls[0]
    assert (merged.response_metadata.model, merged.response_metadata.finish_reason) == ("new", "mine")
    assert merged.duration_ms == 1000.0


def test_a_capture_id_seen_twice_fails_the_record() -> None:
    result = {**ROW, "ng_model_call_capture": {"calls": [capture_call("dup"), capture_call("dup")]}}

    with pytest.raises(ValidationError):
        build_trajectory(ROW, result)


def test_observed_tool_overlays_producer_tool_but_unknown_status_does_not_win() -> None:
    producer = {
        "task_id": "3",
        "rollout_id": "3-1",
        "invocations": [invocation("root", conversation=[{"type": "function_call_output", "call_id": "t1", "output": "new"}])],
        "tool_calls": [{"invocation_id": "root", "tool_call_id": "t1", "status": "completed", "output": "old"}],
    }
    observations = {
        "source": "x",
        "records": [{"kind": "tool_call", "invocation_id": "root", "tool_call_id": "t1", "tool_name": "calc"}],
    }

    record = build_trajectory(ROW, {**ROW, "ng_trajectory": producer, "ng_agent_observations": observations})

    tool = record.tool_calls[0]
    assert (tool.status, tool.tool_name, tool.output) == ("completed", "calc", "new")


def test_invalid_observations_are_a_gap_not_a_failure() -> None:
    result = {**ROW, "ng_agent_observations": {"source": "x", "records": [{"kind": "agent_invocation"}]}}

    record = build_trajectory(ROW, result)

    assert record.gaps[0].code == "agent_observations_invalid"


def test_capture_gaps_are_validated_and_all_gaps_deduplicated() -> None:
    capture = {"calls": [], "gaps": [{"code": "x"}, {"code": 5}, "not-an-object", {"code": "x"}, {"nope": 1}]}

    record = build_trajectory(ROW, {**ROW, "ng_model_call_capture": capture})

    assert codes(record) == [
        "x",
        "model_call_capture_gap_invalid",
        "model_calls_unavailable",
        "turns_unavailable",
        "conversation_unavailable",
    ]


@pytest.mark.parametrize(
    ("request_body", "response", "expected"),
    [
        (
            {"messages": ["m"]},
            {"choices": [{"message": {"content": "a", "reasoning": "r", "tool_calls": [1, 2]}}]},
            (["m"], {"content": "a", "tool_calls": [1, 2]}, "r", 2),
        ),
        ("raw text", {"content": [{"type": "text"}]}, ("raw text", None, None, 0)),
        ({"input": None, "messages": ["ignored"]}, "raw error", (None, None, None, 0)),
    ],
)
def test_turn_content_by_response_shape(request_body: Any, response: Any, expected: tuple[Any, ...]) -> None:
    assert turn_content(request_body, response) == expected


def test_a_string_chat_message_raises_like_0_7_0() -> None:
    with pytest.raises(AttributeError):
        turn_content({}, {"choices": [{"message": "oops"}]})


def test_attach_success_sets_trajectory_and_strips_payloads_without_touching_the_input() -> None:
    capture = {"calls": [capture_call("c1", request_raw=None), "junk"], "gaps": []}
    row = {**ROW, "ng_model_call_capture": capture}
    before = copy.deepcopy(row)
    result = dict(row)

    attach_trajectory(row, result)

    assert result["ng_trajectory"]["model_calls"][0]["request"] == {"input": [{"role": "user", "content": "q"}]}
    assert "request" not in result["ng_model_call_capture"]["calls"][0]
    assert "request_raw" not in result["ng_model_call_capture"]["calls"][0]
    assert result["ng_model_call_capture"]["calls"][1] == "junk"
    assert row == before


def test_the_attached_trajectory_is_pydantics_json_dump_byte_for_byte_sharing_the_conversation() -> None:
    response = {"output": [{"type": "function_call", "name": "f"}, {"type": "reasoning", "summary": []}]}
    conversation = [{"type": "function_call_output", "call_id": "t1", "output": "rows: 1, 2.5"}]
    result = {
        **ROW,
        "ng_agent_observations": {
            "source": "x",
            "records": [
                invocation("root", "c1", "c2", conversation=conversation),
                {"kind": "tool_call", "invocation_id": "root", "tool_call_id": "t1", "tool_name": "calc"},
            ],
        },
        "ng_model_call_capture": {"calls": [capture_call("c1", response=response), capture_call("c2")]},
    }
    record = build_trajectory(ROW, result)
    assert record.turns[0].reasoning_content
    assert record.tool_calls[0].output == "rows: 1, 2.5"

    dump = trajectory_json(record)

    assert orjson.dumps(dump) == orjson.dumps(record.model_dump(mode="json"))
    assert dump["model_calls"][0]["request"] is record.model_calls[0].request
    assert dump["turns"][0]["question"] is record.turns[0].question


def test_attach_failure_appends_the_gap_to_the_capture_and_removes_the_trajectory() -> None:
    capture = {"calls": [capture_call("c1", latency_total_ms=-1.0)], "gaps": [{"code": "old"}]}
    row = {**ROW, "ng_trajectory": {"task_id": "3", "rollout_id": "3-1"}, "ng_model_call_capture": capture}
    result = dict(row)

    attach_trajectory(row, result)

    assert "ng_trajectory" not in result
    assert result["ng_model_call_capture"]["gaps"] == [
        {"code": "old"},
        {"code": "trajectory_projection_failed", "detail": "ValidationError"},
    ]
    assert "request" in result["ng_model_call_capture"]["calls"][0]
    assert capture["gaps"] == [{"code": "old"}]


def test_attach_failure_without_a_gaps_list_sets_the_minimal_record() -> None:
    capture = {"calls": [capture_call("c1", latency_total_ms=-1.0)], "gaps": None}
    result = {**ROW, "ng_model_call_capture": capture}

    attach_trajectory(ROW, result)

    assert result["ng_trajectory"]["gaps"] == [{"code": "trajectory_projection_failed", "invocation_id": None, "detail": "ValidationError"}]
    assert result["ng_trajectory"]["invocations"] == []


def test_attach_failure_without_identity_drops_the_producer_trajectory() -> None:
    result: dict[str, Any] = {"ng_trajectory": {"task_id": "x", "rollout_id": "y"}}

    attach_trajectory({}, result)

    assert result == {}


def test_attach_failure_goes_to_raw_observations_when_there_is_no_capture() -> None:
    observations = {"source": "x", "records": [], "bogus": True}
    result: dict[str, Any] = {"ng_agent_observations": observations}

    attach_trajectory({}, result)

    assert result["ng_agent_observations"]["gaps"] == [{"code": "trajectory_projection_failed", "detail": "KeyError"}]
    assert "gaps" not in observations
