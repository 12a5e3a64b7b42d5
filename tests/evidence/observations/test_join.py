"""Reference join outcomes (collection.md §6) and the conversation normalisation (§8.9)."""

from __future__ import annotations

from typing import Any

from evidence.capture.record import build_record
from evidence.models.capture import ModelCallRecord
from evidence.models.observations import AgentObservationBundle
from evidence.observations import join_model_call_observations, join_observations

POLICY = {"type": "responses_api_models", "name": "policy"}


def call(index: int, call_id: str | None, response_id: str | None, **extra: Any) -> ModelCallRecord:
    return build_record({"model_call_id": call_id, "model_ref": POLICY, "response": {"id": response_id}, **extra}, index)


def invocation(invocation_id: str, *refs: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "agent_invocation", "invocation_id": invocation_id, "model_calls": list(refs)}


def joined(records: list[dict[str, Any]], calls: list[ModelCallRecord], gaps: list[Any] | None = None) -> dict[str, Any]:
    return join_observations({"source": "test", "records": records, "gaps": gaps or []}, calls)


def gap(code: str, invocation_id: str | None, detail: str) -> dict[str, Any]:
    return {"code": code, "invocation_id": invocation_id, "detail": detail}


CALLS = [call(0, "c0", "r0"), call(1, "c1", "r1"), call(2, "c2", "dup"), call(3, "c3", "dup"), call(4, None, None)]


def test_matched_refs_become_canonical_and_unowned_calls_are_reported() -> None:
    bundle = joined([invocation("a", {"model_call_id": "c0"}, {"model_ref": POLICY, "response_id": "r1"})], CALLS)
    assert bundle["records"][0]["model_calls"] == [
        {"model_call_id": "c0", "model_ref": POLICY, "response_id": "r0"},
        {"model_call_id": "c1", "model_ref": POLICY, "response_id": "r1"},
    ]
    assert bundle["gaps"] == [
        gap("model_call_ownership_unavailable", None, "capture:c2:call_index=2"),
        gap("model_call_ownership_unavailable", None, "capture:c3:call_index=3"),
        gap("model_call_ownership_unavailable", None, "capture:unknown:call_index=4"),
    ]


def test_unmatched_ambiguous_and_conflict() -> None:
    records = [
        invocation(
            "a",
            {"model_call_id": "nope"},
            {"model_call_id": "c0", "response_id": "other"},
            {"model_ref": POLICY, "response_id": "dup"},
            {"model_call_id": "nope"},
            {"model_call_id": "c1"},
        ),
        invocation("b", {"model_call_id": "c1"}, {"model_call_id": "c0"}),
    ]
    bundle = joined(records, CALLS[:4])
    assert bundle["records"][1]["model_calls"][0] == {"model_call_id": "c1", "model_ref": None, "response_id": None}
    assert bundle["gaps"] == [
        gap("model_call_reference_unmatched", "a", "nope"),
        gap("model_call_reference_unmatched", "a", "c0"),
        gap("model_call_reference_ambiguous", "a", "dup"),
        gap("model_call_reference_conflict", "b", "c1"),
        gap("model_call_ownership_unavailable", None, "capture:c2:call_index=2"),
        gap("model_call_ownership_unavailable", None, "capture:c3:call_index=3"),
    ]


def test_compaction_refs_never_confer_ownership() -> None:
    compaction = {
        "kind": "context_compaction",
        "invocation_id": "a",
        "outcome": "completed",
        "before_model_call": {"model_call_id": "c1"},
        "after_model_call": {"model_call_id": "zzz"},
        "model_calls": [{"model_call_id": "c0"}, {"model_call_id": "c2"}, {"model_call_id": "c3"}],
    }
    bundle = joined([invocation("a", {"model_call_id": "c0"}), invocation("b", {"model_call_id": "c1"}), compaction], CALLS[:4])
    assert bundle["records"][2]["model_calls"][0]["response_id"] == "r0"
    assert bundle["records"][2]["before_model_call"] == {"model_call_id": "c1", "model_ref": None, "response_id": None}
    assert bundle["gaps"] == [
        gap("model_call_ownership_unavailable", "a", "model_calls:c2"),
        gap("model_call_ownership_unavailable", "a", "model_calls:c3"),
        gap("model_call_reference_conflict", "a", "before_model_call:c1"),
        gap("model_call_reference_unmatched", "a", "after_model_call:zzz"),
        gap("model_call_ownership_unavailable", None, "capture:c2:call_index=2"),
        gap("model_call_ownership_unavailable", None, "capture:c3:call_index=3"),
    ]


def test_client_session_id_claims_calls_unless_already_referenced() -> None:
    calls = [
        call(0, "s0", "r0", client_session_id="a"),
        call(1, "s1", "r1", client_session_id="a"),
        call(2, "s2", "r2", client_session_id="ghost"),
    ]
    bundle = joined([invocation("a", {"model_ref": POLICY, "response_id": "r0"})], calls)
    assert [ref["model_call_id"] for ref in bundle["records"][0]["model_calls"]] == ["s0", "s1"]
    assert bundle["gaps"] == [gap("model_call_ownership_unavailable", None, "capture:s2:call_index=2")]


def test_rejoining_is_idempotent_and_keeps_foreign_gaps() -> None:
    records = [invocation("a", {"model_call_id": "c0"}, {"model_call_id": "nope"})]
    producer_gaps = [gap("tool_output_unavailable", "a", "t"), gap("model_call_ownership_unavailable", "a", "model_calls:x")]
    once = joined(records, CALLS, producer_gaps)
    assert once["gaps"][:2] == producer_gaps
    twice = join_observations(once, CALLS)
    assert twice == once
    bundle = AgentObservationBundle.model_validate(once)
    assert join_model_call_observations(bundle, CALLS).as_json() == once


def test_conversation_items_are_normalised() -> None:
    record = invocation("a")
    record["conversation"] = [
        {"role": "user", "content": "hi"},
        {"call_id": "k", "output": "o"},
        {"role": "assistant", "content": [], "id": "m"},
    ]
    bundle = joined([record], [])
    assert bundle["records"][0]["conversation"] == [
        {"content": "hi", "role": "user", "type": "message", "phase": None},
        {"call_id": "k", "output": "o", "type": "function_call_output", "id": None, "status": None},
        {"id": "m", "content": [], "role": "assistant", "status": "completed", "type": "message", "phase": None},
    ]
