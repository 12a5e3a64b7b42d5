"""Each capability dimension on hand-built rows (complete, partial, unavailable), then the fold."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evidence.capabilities import (
    DIMENSIONS,
    UNKNOWN_AGENT,
    build_capabilities,
    capability_digest,
    histogram_values,
)

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"
MODEL_REF = {"type": "responses_api_models", "name": "policy_model"}


def make_call(call_id: str, started: float, **metadata: Any) -> dict[str, Any]:
    """A trajectory model call as 0.7.0 projects a captured one."""
    tokens = metadata.pop("tokens", (100, 20))
    return {
        "model_call_id": call_id,
        "started_at": started,
        "completed_at": started + 1.0,
        "duration_ms": 1000.0,
        "request": None,
        "response": None,
        "response_metadata": {
            "response_id": f"resp-{call_id}",
            "model_ref": MODEL_REF,
            "model": "qwen",
            "status_code": 200,
            "error_category": None,
            **metadata,
        },
        "token_stats": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]},
    }


def ref_of(call: dict[str, Any]) -> dict[str, Any]:
    metadata = call["response_metadata"]
    return {"model_call_id": call["model_call_id"], "model_ref": metadata["model_ref"], "response_id": metadata["response_id"]}


def producer_turn(invocation_id: str, turn_no: int, timestamp: float) -> dict[str, Any]:
    """A producer turn: its own timestamp, refs by (model_ref, response_id) as Harbor-style agents write them."""
    return {
        "invocation_id": invocation_id,
        "turn_no": turn_no,
        "timestamp": timestamp,
        "model_calls": [{"model_call_id": None, "model_ref": MODEL_REF, "response_id": f"resp-c{turn_no}"}],
    }


def synthesized_turn(invocation_id: str, turn_no: int, call: dict[str, Any]) -> dict[str, Any]:
    """What 0.7.0 builds from one model call (spec collection §8.7)."""
    return {"invocation_id": invocation_id, "turn_no": turn_no, "timestamp": call["started_at"], "model_calls": [ref_of(call)]}


def make_tool(tool_call_id: str, started: float | None, *, invocation_id: str = "root", **fields: Any) -> dict[str, Any]:
    return {
        "kind": "tool_call",
        "invocation_id": invocation_id,
        "tool_call_id": tool_call_id,
        "started_at": started,
        "completed_at": None if started is None else started + 0.5,
        "status": "completed",
        "output": "ok",
        **fields,
    }


SANDBOX = {"kind": "sandbox", "role": "agent", "wall_time_s": 9.8, "cpu_time_s": 4.1, "peak_memory_mib": 512.0}


def full_row() -> dict[str, Any]:
    """Every dimension complete: two owned calls, producer turns, timed tools, a measured sandbox."""
    calls = [make_call("c1", 10.0), make_call("c2", 20.0)]
    trajectory = {
        "schema_version": "1.0",
        "task_id": "0",
        "rollout_id": "0-0",
        "invocations": [
            {
                "kind": "agent_invocation",
                "invocation_id": "root",
                "model_calls": [ref_of(call) for call in calls],
                "conversation": [{"role": "user", "content": "hi", "type": "message"}],
            }
        ],
        "turns": [producer_turn("root", 1, 9.5), producer_turn("root", 2, 19.5)],
        "model_calls": calls,
        "tool_calls": [make_tool("t1", 12.0), make_tool("t2", 12.1)],
        "gaps": [],
    }
    capture_calls = [
        {"model_call_id": "c1", "tool_calls": [{"call_id": "t1"}, {"call_id": "t2"}]},
        {"model_call_id": "c2", "tool_calls": []},
    ]
    return {
        "agent_ref": {"type": "responses_api_agents", "name": "harness_agent"},
        "ng_perf": {"num_turns": 2, "completion_tokens": 40, "total_latency_ms": 2500},
        "ng_agent_observations": {"source": "harness", "records": [SANDBOX], "gaps": []},
        "ng_model_call_capture": {"rollout_id": "0-0", "calls": capture_calls},
        "ng_trajectory": trajectory,
    }


def measured(row: dict[str, Any], dimension: str) -> dict[str, Any]:
    return capability_digest(row)["dimensions"][dimension]


def add_gap(row: dict[str, Any], code: str) -> None:
    row["ng_trajectory"]["gaps"].append({"code": code, "invocation_id": None, "detail": None})


COMPLETE = {"present": True, "complete": True, "gaps": []}


def test_full_row_is_complete_in_every_dimension() -> None:
    digest = capability_digest(full_row())
    assert list(digest["dimensions"]) == list(DIMENSIONS)
    assert all(value == COMPLETE for value in digest["dimensions"].values())
    assert digest["agent"] == "harness_agent"
    assert digest["latency_ms"] == 2500.0
    assert digest["tokens_per_turn"] == 20.0


def test_tokens_per_turn_that_overflows_is_not_measured() -> None:
    row = full_row()
    row["ng_perf"] |= {"completion_tokens": 1e308, "num_turns": 0.5}
    assert capability_digest(row)["tokens_per_turn"] is None


def test_digest_does_not_mutate_the_row_and_is_json() -> None:
    row = full_row()
    before = copy.deepcopy(row)
    digest = capability_digest(row)
    assert row == before
    assert orjson.loads(orjson.dumps(digest)) == digest


# --- per-call metadata ----------------------------------------------------------------------


def test_per_call_metadata_partial_when_an_owned_call_lacks_fields() -> None:
    row = full_row()
    row["ng_trajectory"]["model_calls"][1]["response_metadata"]["status_code"] = None
    assert measured(row, "per_call_metadata") == {"present": True, "complete": False, "gaps": ["response_metadata_missing"]}


def test_per_call_metadata_missing_model_ref() -> None:
    row = full_row()
    row["ng_trajectory"]["model_calls"][0]["response_metadata"]["model_ref"] = None
    row["ng_trajectory"]["invocations"][0]["model_calls"][0] = {"model_call_id": "c1", "model_ref": None, "response_id": None}
    assert measured(row, "per_call_metadata") == {"present": True, "complete": False, "gaps": ["model_ref_missing"]}


def test_unresolvable_ref_leaves_the_call_unowned_and_unjudged() -> None:
    row = full_row()
    row["ng_trajectory"]["model_calls"][0]["response_metadata"]["status_code"] = None
    row["ng_trajectory"]["invocations"][0]["model_calls"][0] = {"model_call_id": "nope", "model_ref": None, "response_id": None}
    assert measured(row, "per_call_metadata") == COMPLETE


def test_owned_call_without_model_call_id_is_a_shortfall() -> None:
    row = full_row()
    row["ng_trajectory"]["model_calls"][0]["model_call_id"] = None
    row["ng_trajectory"]["invocations"][0]["model_calls"][0]["model_call_id"] = None
    assert measured(row, "per_call_metadata")["gaps"] == ["model_call_id_missing"]


def test_per_call_metadata_unavailable_when_no_call_is_owned() -> None:
    row = full_row()
    row["ng_trajectory"]["invocations"][0]["model_calls"] = []
    add_gap(row, "model_call_ownership_unavailable")
    add_gap(row, "conversation_unavailable")  # unrelated to calls: not reported here
    assert measured(row, "per_call_metadata") == {
        "present": False,
        "complete": False,
        "gaps": ["model_call_ownership_unavailable", "model_calls_unowned"],
    }


def test_per_call_metadata_unavailable_without_model_calls() -> None:
    row = full_row()
    row["ng_trajectory"]["model_calls"] = []
    add_gap(row, "model_call_capture_no_records")
    assert measured(row, "per_call_metadata")["gaps"] == ["model_call_capture_no_records", "model_calls_unavailable"]


def test_ownership_follows_ng_perf_first_claim_wins() -> None:
    row = full_row()
    invocations = row["ng_trajectory"]["invocations"]
    invocations.append(
        {"kind": "agent_invocation", "invocation_id": "sub", "model_calls": [ref_of(row["ng_trajectory"]["model_calls"][0])]}
    )
    # c1 stays root's: "sub" owns nothing, so it owes no turn.
    assert measured(row, "semantic_turns") == COMPLETE


# --- token counts ---------------------------------------------------------------------------


def test_token_counts_partial_when_a_successful_call_lacks_completion() -> None:
    row = full_row()
    row["ng_trajectory"]["model_calls"][1]["token_stats"]["completion_tokens"] = None
    assert measured(row, "token_counts") == {"present": True, "complete": False, "gaps": ["token_counts_missing"]}


def test_failed_calls_owe_no_token_counts() -> None:
    row = full_row()
    failed = row["ng_trajectory"]["model_calls"][1]
    failed["response_metadata"].update(status_code=500, error_category="upstream_error")
    failed["token_stats"] = {"prompt_tokens": None, "completion_tokens": None}
    assert measured(row, "token_counts") == COMPLETE


def test_token_counts_must_be_exact_non_negative_ints() -> None:
    row = full_row()
    for call in row["ng_trajectory"]["model_calls"]:
        call["token_stats"] = {"prompt_tokens": 10.0, "completion_tokens": True}
    assert measured(row, "token_counts") == {"present": False, "complete": False, "gaps": ["token_counts_missing"]}


# --- model-visible history ------------------------------------------------------------------


def test_history_partial_when_one_invocation_has_no_conversation() -> None:
    row = full_row()
    row["ng_trajectory"]["invocations"].append({"kind": "agent_invocation", "invocation_id": "sub", "model_calls": [], "conversation": []})
    assert measured(row, "model_visible_history") == {"present": True, "complete": False, "gaps": ["conversation_missing"]}


def test_redacted_history_is_not_complete() -> None:
    row = full_row()
    add_gap(row, "multimodal_history_redacted")
    assert measured(row, "model_visible_history") == {"present": True, "complete": False, "gaps": ["multimodal_history_redacted"]}


def test_history_unavailable_without_conversations() -> None:
    row = full_row()
    row["ng_trajectory"]["invocations"][0]["conversation"] = []
    add_gap(row, "conversation_unavailable")
    assert measured(row, "model_visible_history") == {"present": False, "complete": False, "gaps": ["conversation_unavailable"]}


# --- semantic turns -------------------------------------------------------------------------


def test_turns_rebuilt_from_model_calls_are_not_semantic() -> None:
    row = full_row()
    calls = row["ng_trajectory"]["model_calls"]
    row["ng_trajectory"]["turns"] = [synthesized_turn("root", n, call) for n, call in enumerate(calls, 1)]
    assert measured(row, "semantic_turns") == {"present": False, "complete": False, "gaps": ["turns_synthesized"]}


def test_mixed_turns_are_partial() -> None:
    row = full_row()
    row["ng_trajectory"]["turns"][1] = synthesized_turn("root", 2, row["ng_trajectory"]["model_calls"][1])
    assert measured(row, "semantic_turns") == {"present": True, "complete": False, "gaps": ["turns_synthesized"]}


def test_a_producer_turn_with_its_own_timestamp_is_explicit_even_with_canonical_refs() -> None:
    row = full_row()
    call = row["ng_trajectory"]["model_calls"][0]
    row["ng_trajectory"]["turns"][0] = {**synthesized_turn("root", 1, call), "timestamp": call["started_at"] - 0.25}
    assert measured(row, "semantic_turns") == COMPLETE


def test_invocation_owning_calls_without_turns_is_a_shortfall() -> None:
    row = full_row()
    row["ng_trajectory"]["turns"] = [{**turn, "invocation_id": "other"} for turn in row["ng_trajectory"]["turns"]]
    assert measured(row, "semantic_turns") == {"present": True, "complete": False, "gaps": ["invocation_turns_missing"]}


def test_no_turns_is_unavailable() -> None:
    row = full_row()
    row["ng_trajectory"]["turns"] = []
    add_gap(row, "turns_unavailable")
    assert measured(row, "semantic_turns") == {"present": False, "complete": False, "gaps": ["turns_unavailable"]}


# --- tool execution and parallel timing -----------------------------------------------------


def test_requested_tool_without_record_is_unrecorded() -> None:
    row = full_row()
    row["ng_model_call_capture"]["calls"][1]["tool_calls"] = [{"call_id": "t3"}]
    assert measured(row, "tool_execution") == {"present": True, "complete": False, "gaps": ["tool_calls_unrecorded"]}
    assert measured(row, "parallel_timing") == COMPLETE


def test_tool_records_need_status_and_output() -> None:
    row = full_row()
    row["ng_trajectory"]["tool_calls"][0]["status"] = "unknown"
    row["ng_trajectory"]["tool_calls"][1]["output"] = None
    add_gap(row, "tool_output_unavailable")
    assert measured(row, "tool_execution")["gaps"] == ["tool_output_missing", "tool_output_unavailable", "tool_status_unknown"]


def test_no_tool_records_while_tools_were_requested_is_unavailable() -> None:
    row = full_row()
    row["ng_trajectory"]["tool_calls"] = []
    expected = {"present": False, "complete": False, "gaps": ["tool_calls_unrecorded"]}
    assert measured(row, "tool_execution") == expected
    assert measured(row, "parallel_timing") == expected


def test_no_tool_use_is_complete_when_calls_were_captured() -> None:
    row = full_row()
    row["ng_trajectory"]["tool_calls"] = []
    for call in row["ng_model_call_capture"]["calls"]:
        call["tool_calls"] = []
    assert measured(row, "tool_execution") == COMPLETE
    assert measured(row, "parallel_timing") == COMPLETE


def test_tool_use_unknown_without_capture_or_records() -> None:
    row = full_row()
    row["ng_trajectory"]["tool_calls"] = []
    row["ng_model_call_capture"] = {"rollout_id": "0-0", "calls": [], "gaps": [{"code": "model_call_capture_no_records"}]}
    add_gap(row, "model_call_capture_no_records")
    assert measured(row, "tool_execution")["gaps"] == ["model_call_capture_no_records", "tool_use_unknown"]


def test_parallel_timing_partial_when_an_interval_is_missing() -> None:
    row = full_row()
    row["ng_trajectory"]["tool_calls"][1] = make_tool("t2", None)
    assert measured(row, "parallel_timing") == {"present": True, "complete": False, "gaps": ["tool_timing_missing"]}


def test_shared_interval_in_one_invocation_is_batch_timing() -> None:
    row = full_row()
    row["ng_trajectory"]["tool_calls"][1] = make_tool("t2", 12.0)
    assert measured(row, "parallel_timing") == {"present": True, "complete": False, "gaps": ["tool_timing_shared"]}
    row["ng_trajectory"]["tool_calls"][1] = make_tool("t2", 12.0, invocation_id="sub")
    assert measured(row, "parallel_timing") == COMPLETE


def test_reversed_interval_is_not_an_interval() -> None:
    row = full_row()
    row["ng_trajectory"]["tool_calls"][0]["completed_at"] = 11.0
    assert measured(row, "parallel_timing")["gaps"] == ["tool_timing_missing"]


# --- sandbox --------------------------------------------------------------------------------


def test_sandbox_partial_usage() -> None:
    row = full_row()
    row["ng_agent_observations"]["records"] = [SANDBOX, {**SANDBOX, "cpu_time_s": None}]
    assert measured(row, "sandbox") == {"present": True, "complete": False, "gaps": ["sandbox_usage_missing"]}


def test_sandbox_without_any_measurement_is_not_present() -> None:
    row = full_row()
    row["ng_agent_observations"]["records"] = [{"kind": "sandbox", "role": "agent"}]
    add_gap(row, "sandbox_resource_usage_unavailable")
    assert measured(row, "sandbox") == {
        "present": False,
        "complete": False,
        "gaps": ["sandbox_resource_usage_unavailable", "sandbox_usage_missing"],
    }


def test_no_sandbox_record_is_unavailable() -> None:
    row = full_row()
    row["ng_agent_observations"] = None
    assert measured(row, "sandbox") == {"present": False, "complete": False, "gaps": ["sandbox_unavailable"]}


# --- rows without a trajectory --------------------------------------------------------------


def test_row_without_trajectory_is_unavailable_everywhere_and_says_why() -> None:
    row = full_row()
    del row["ng_trajectory"]
    row["ng_model_call_capture"]["gaps"] = [{"code": "trajectory_projection_failed", "detail": "ValidationError"}]
    dimensions = capability_digest(row)["dimensions"]
    assert all(
        value == {"present": False, "complete": False, "gaps": ["trajectory_projection_failed", "trajectory_unavailable"]}
        for value in dimensions.values()
    )


def test_row_without_agent_ref_is_grouped_under_unknown() -> None:
    assert capability_digest({"agent_ref": {"name": 7}})["agent"] == UNKNOWN_AGENT


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=25,
)
ROW_KEYS = st.sampled_from(["agent_ref", "ng_trajectory", "ng_model_call_capture", "ng_agent_observations", "ng_perf"])


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(ROW_KEYS, JSON_VALUES, max_size=5), st.data())
def test_digest_never_raises_on_odd_rows(row: dict[str, Any], data: st.DataObject) -> None:
    mutated = full_row()
    path = data.draw(st.sampled_from(["invocations", "turns", "model_calls", "tool_calls", "gaps"]))
    mutated["ng_trajectory"][path] = data.draw(JSON_VALUES)
    for candidate in (row, mutated):
        digest = capability_digest(candidate)
        assert set(digest["dimensions"]) == set(DIMENSIONS)
        orjson.dumps(digest)


# --- fold -----------------------------------------------------------------------------------


def test_build_capabilities_statuses_fractions_and_order() -> None:
    partial = full_row()
    partial["ng_trajectory"]["tool_calls"][0]["output"] = None
    other = full_row()
    other["agent_ref"]["name"] = "chat_agent"
    digests = [capability_digest(row) for row in (full_row(), partial, full_row(), full_row(), other)]
    caps = build_capabilities(digests)
    assert list(caps) == ["dimensions", "agents"]
    assert caps["dimensions"] == list(DIMENSIONS)
    assert list(caps["agents"]) == ["chat_agent", "harness_agent"]
    harness = caps["agents"]["harness_agent"]
    assert harness["rollouts"] == 4
    assert list(harness["dimensions"]) == list(DIMENSIONS)
    assert harness["dimensions"]["tool_execution"] == {
        "status": "partial",
        "symbol": "\U0001f7e1",
        "complete": 0.75,
        "present": 1.0,
        "gaps": {"tool_output_missing": 1},
    }
    assert harness["dimensions"]["sandbox"]["status"] == "full"
    assert harness["dimensions"]["sandbox"]["symbol"] == "\u2705"
    assert isinstance(harness["dimensions"]["sandbox"]["complete"], float)


def test_unavailable_means_complete_in_no_rollout_even_when_present() -> None:
    row = full_row()
    row["ng_trajectory"]["tool_calls"][0]["output"] = None
    entry = build_capabilities([capability_digest(row)])["agents"]["harness_agent"]["dimensions"]["tool_execution"]
    assert (entry["status"], entry["symbol"], entry["complete"], entry["present"]) == ("unavailable", "\u274c", 0.0, 1.0)


def test_gap_codes_are_counted_per_rollout_and_sorted() -> None:
    rows = [full_row() for _ in range(3)]
    for row in rows[:2]:
        row["ng_agent_observations"] = None
    rows[2]["ng_agent_observations"]["records"] = [{"kind": "sandbox"}]
    gaps = build_capabilities(map(capability_digest, rows))["agents"]["harness_agent"]["dimensions"]["sandbox"]["gaps"]
    assert list(gaps.items()) == [("sandbox_unavailable", 2), ("sandbox_usage_missing", 1)]


def test_histogram_values_skip_rollouts_without_perf() -> None:
    no_perf = full_row()
    del no_perf["ng_perf"]
    zero_turns = full_row()
    zero_turns["ng_perf"] = {"num_turns": 0, "completion_tokens": 5, "total_latency_ms": True}
    values = histogram_values(capability_digest(row) for row in (full_row(), no_perf, zero_turns))
    assert values == {"latency_ms": [2500.0], "tokens_per_turn": [20.0]}


def load_rows(job: str) -> list[dict[str, Any]]:
    lines = (SAMPLES / f"{job}.expected" / "rollouts.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_realistic_sample_matrix() -> None:
    """Regression on the sample job: six agents, each with what its evidence really carries."""
    caps = build_capabilities(capability_digest(row) for row in load_rows("realistic_job"))
    statuses = {agent: [entry["dimensions"][d]["status"] for d in DIMENSIONS] for agent, entry in caps["agents"].items()}
    full, part, none = "full", "partial", "unavailable"
    assert statuses == {
        "chat_agent": [full, full, full, none, full, full, none],
        "claude_agent_sdk": [full, full, full, full, full, full, none],
        "claude_code_agent": [full, full, full, none, full, full, none],
        "harness_agent": [full, full, full, part, full, full, part],
        "plain_agent": [none] * 7,
        "simple_agent": [full, full, full, full, full, full, none],
    }
    assert caps["agents"]["harness_agent"]["dimensions"]["semantic_turns"]["gaps"] == {"turns_synthesized": 2}


@pytest.mark.parametrize("job", ["realistic_job", "hostile_job"])
def test_sample_digests_fold_in_any_grouping(job: str) -> None:
    digests = [capability_digest(row) for row in load_rows(job)]
    assert build_capabilities(digests) == build_capabilities(reversed(digests))
    assert sum(entry["rollouts"] for entry in build_capabilities(digests)["agents"].values()) == len(digests)
