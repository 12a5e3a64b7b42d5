"""Unit tests of ng_perf (collection.md §9)."""

from __future__ import annotations

from typing import Any

from evidence.ng_perf import attach_ng_perf, build_ng_perf

REF = {"type": "responses_api_models", "name": "policy"}


def trajectory(**fields: Any) -> dict[str, Any]:
    return {"task_id": "1", "rollout_id": "1-0", **fields}


def inv(invocation_id: str, *refs: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "agent_invocation", "invocation_id": invocation_id, "model_calls": list(refs)}


def call(call_id: str | None, response_id: str | None = None, **tokens: int) -> dict[str, Any]:
    return {
        "model_call_id": call_id,
        "response_metadata": {"response_id": response_id, "model_ref": REF},
        "token_stats": tokens,
    }


def test_turns_fall_back_to_owned_calls_then_one_and_tools_need_a_present_invocation() -> None:
    record = trajectory(
        invocations=[inv("A", {"model_call_id": "a1"}), inv("B", {"model_call_id": "b1"}, {"model_call_id": "b2"}), inv("C")],
        turns=[
            {"invocation_id": "A", "task_id": "1", "rollout_id": "1-0", "turn_no": n, "timestamp": 1.0, "step_count": 0} for n in (1, 2, 3)
        ],
        model_calls=[call("a1", prompt_tokens=10), call("b1", prompt_tokens=1), call("b2", completion_tokens=4)],
        tool_calls=[{"invocation_id": "A", "tool_call_id": "t"}, {"invocation_id": "ghost", "tool_call_id": "g"}],
    )

    perf = build_ng_perf(record, 12)

    assert perf == {
        "num_turns": 6,
        "num_tool_calls": 1,
        "token_observability_coverage": 0.5,
        "prompt_tokens": 11,
        "completion_tokens": 4,
        "total_latency_ms": 12,
    }
    assert list(perf) == [
        "num_turns",
        "num_tool_calls",
        "token_observability_coverage",
        "prompt_tokens",
        "completion_tokens",
        "total_latency_ms",
    ]


def test_a_call_claimed_twice_counts_once_and_ambiguous_triples_are_unowned() -> None:
    by_triple = {"model_ref": REF, "response_id": "r"}
    record = trajectory(
        invocations=[inv("A", {"model_call_id": "x"}, {"model_call_id": "x"}), inv("B", {"model_call_id": "x"}, by_triple)],
        model_calls=[call("x", prompt_tokens=3), call(None, "r"), call("y", "r")],
    )

    perf = build_ng_perf(record, None)

    assert perf is not None
    assert perf["prompt_tokens"] == 3
    assert perf["token_observability_coverage"] == 0.5
    assert "total_latency_ms" not in perf


def test_coverage_is_capped_at_one() -> None:
    record = trajectory(
        invocations=[inv("A", {"model_call_id": "a"}, {"model_call_id": "b"})],
        turns=[{"invocation_id": "A", "task_id": "1", "rollout_id": "1-0", "turn_no": 1, "timestamp": 1.0, "step_count": 0}],
        model_calls=[call("a"), call("b")],
    )

    assert build_ng_perf(record, None)["token_observability_coverage"] == 1.0  # type: ignore[index]


def test_no_perf_without_a_valid_trajectory_with_invocations() -> None:
    assert build_ng_perf(None, 1.0) is None
    assert build_ng_perf(trajectory(), 1.0) is None
    assert build_ng_perf(trajectory(bogus=1, invocations=[inv("A")]), 1.0) is None


def test_attach_keeps_a_stale_perf_when_nothing_can_be_built_and_replaces_it_otherwise() -> None:
    stale = {"num_turns": 9, "extra": True}
    row: dict[str, Any] = {"ng_perf": stale, "ng_trajectory": trajectory()}
    attach_ng_perf(row, 5)
    assert row["ng_perf"] is stale

    row["ng_trajectory"] = trajectory(invocations=[inv("A")])
    attach_ng_perf(row, 5)
    assert row["ng_perf"] == {"num_turns": 1, "num_tool_calls": 0, "token_observability_coverage": 0.0, "total_latency_ms": 5}
