"""Reference resolution rules (evidence.references), each as its 0.7.0 path resolves.

The empty-``response_id`` cases were checked by hand against nemo-gym 0.7.0
(``_build_ng_perf`` and ``health.checks._bind_policy_call_views``): a ref's ``response_id`` filters
its id match whenever it is not None, so ``""`` matches only a call whose response id is ``""``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evidence.capabilities.rollout import rollout_evidence
from evidence.collect import collect_row
from evidence.health.view import build_view
from evidence.models.capture import ModelRef
from evidence.models.observations import ModelCallRef
from evidence.ng_perf import build_ng_perf
from evidence.references import (
    CallIndex,
    json_name,
    json_ref_name,
    names_call,
    ng_perf_owners,
    ref_name,
    typed_name,
)
from tests.conformance.conftest import load_cases
from tests.conformance.test_collect_golden import lookup_from

MODEL_REF = {"type": "responses_api_models", "name": "policy"}


def _call(call_id: str, response_id: str) -> dict[str, Any]:
    return {
        "model_call_id": call_id,
        "response_metadata": {"response_id": response_id, "model_ref": MODEL_REF, "status_code": 200},
        "token_stats": {"prompt_tokens": 5, "completion_tokens": 1},
    }


def _trajectory(ref: dict[str, Any], call_response_id: str) -> dict[str, Any]:
    return {
        "task_id": "1",
        "rollout_id": "1-0",
        "invocations": [{"kind": "agent_invocation", "invocation_id": "root", "model_calls": [ref]}],
        "turns": [
            {
                "task_id": "1",
                "rollout_id": "1-0",
                "invocation_id": "root",
                "turn_no": 1,
                "timestamp": 1.0,
                "step_count": 0,
                "model_calls": [ref],
            }
        ],
        "model_calls": [_call("c1", call_response_id)],
    }


# (ref response_id, call response_id) -> does the ref name the call?
EMPTY_RESPONSE_ID_CASES = [
    (None, "r1", True),
    ("r1", "r1", True),
    ("", "r1", False),
    ("", "", True),
    ("r2", "r1", False),
]


@pytest.mark.parametrize(("ref_response_id", "call_response_id", "matches"), EMPTY_RESPONSE_ID_CASES)
def test_ng_perf_ownership_filters_on_any_non_null_response_id(ref_response_id: str | None, call_response_id: str, matches: bool) -> None:
    ref = {"model_call_id": "c1", "response_id": ref_response_id}
    perf = build_ng_perf(_trajectory(ref, call_response_id), None)
    assert perf is not None
    assert perf["token_observability_coverage"] == (1.0 if matches else 0.0)
    assert ("prompt_tokens" in perf) is matches


@pytest.mark.parametrize(("ref_response_id", "call_response_id", "matches"), EMPTY_RESPONSE_ID_CASES)
def test_health_binding_filters_on_any_non_null_response_id(ref_response_id: str | None, call_response_id: str, matches: bool) -> None:
    ref = {"model_call_id": "c1", "response_id": ref_response_id}
    view = build_view({"ng_trajectory": _trajectory(ref, call_response_id)})
    for binding in (view.turn_view, view.owned_view):
        assert [call.model_call_id for call in binding.matched] == (["c1"] if matches else [])
        assert binding.missing == (() if matches else ("call:c1",))


@pytest.mark.parametrize(("ref_response_id", "call_response_id", "matches"), EMPTY_RESPONSE_ID_CASES)
def test_capability_ownership_filters_on_any_non_null_response_id(
    ref_response_id: str | None, call_response_id: str, matches: bool
) -> None:
    ref = {"model_call_id": "c1", "response_id": ref_response_id}
    evidence = rollout_evidence({"ng_trajectory": _trajectory(ref, call_response_id)})
    assert [call["model_call_id"] for call in evidence.owned_calls] == (["c1"] if matches else [])


CALLS = [
    {"model_call_id": "c1", "response_id": "r1", "model_ref": MODEL_REF},
    {"model_call_id": "c2", "response_id": "r1", "model_ref": MODEL_REF},
    {"model_call_id": None, "response_id": "r2", "model_ref": MODEL_REF},
    {"model_call_id": "c3", "response_id": None, "model_ref": None},
    {"model_call_id": None, "response_id": "r3", "model_ref": {"type": "responses_api_models", "name": "judge"}},
]
REFS = [
    {"model_call_id": "c1"},
    {"model_call_id": "c1", "response_id": "r2"},
    {"model_call_id": "c3", "model_ref": MODEL_REF},
    {"model_ref": MODEL_REF, "response_id": "r1"},
    {"model_ref": MODEL_REF, "response_id": "r2"},
    {"model_call_id": "", "model_ref": MODEL_REF, "response_id": "r2"},
    {"model_ref": MODEL_REF, "response_id": "r3"},
    {"model_call_id": "nope"},
]
# ref position -> candidate positions (collection rule, spec collection.md §6.3)
EXPECTED = [[0], [], [], [0, 1], [2], [2], [], []]


def test_the_collection_rule_reads_models_and_json_alike() -> None:
    typed_calls = CallIndex(
        [
            typed_name(call["model_call_id"], None if call["model_ref"] is None else ModelRef(**call["model_ref"]), call["response_id"])
            for call in CALLS
        ]
    )
    json_calls = CallIndex([json_name(call["model_call_id"], call["model_ref"], call["response_id"]) for call in CALLS])
    assert [typed_calls.candidates(ref_name(ModelCallRef.model_validate(ref))) for ref in REFS] == EXPECTED
    assert [json_calls.candidates(json_ref_name(ref)) for ref in REFS] == EXPECTED


def test_ng_perf_owners_keep_the_first_unique_claim() -> None:
    index = CallIndex([json_name(call["model_call_id"], call["model_ref"], call["response_id"]) for call in CALLS])
    invocations = [
        ("a", [json_ref_name({"model_ref": MODEL_REF, "response_id": "r1"}), json_ref_name({"model_call_id": "c2"})]),
        ("b", [json_ref_name({"model_call_id": "c2"}), json_ref_name({"model_call_id": "c1"})]),
    ]
    assert ng_perf_owners(index, invocations) == {1: "a", 0: "b"}


# before/after ref of case 49's compaction -> the compaction's linked calls, as 0.7.0 links them
# (checked with the oracle's ref_collect.py): an id names its call whatever else the ref says,
# while a model_ref the call does not have still rules the call out as a summary call.
BOUND_CASES = [
    ("before_model_call", {"model_call_id": "cc-1"}, ["cc-2"]),
    ("before_model_call", {"model_call_id": "cc-1", "response_id": "not-it"}, ["cc-2"]),
    ("after_model_call", {"model_call_id": "cc-3", "response_id": "not-it"}, ["cc-2"]),
    ("before_model_call", {"model_call_id": "cc-1", "model_ref": {"type": "responses_api_models", "name": "x"}}, []),
    ("before_model_call", {"model_call_id": "cc-9"}, []),
]


@pytest.mark.parametrize(("field", "ref", "linked"), BOUND_CASES)
def test_claude_code_bounds_resolve_by_id_alone(field: str, ref: dict[str, Any], linked: list[str]) -> None:
    case = dict(load_cases("collect"))["49_claude_code_compaction_association"]
    row = copy.deepcopy(case["row"])
    row["ng_agent_observations"]["records"][1][field] = ref
    collected = collect_row(row, lookup_from(case["capture_files"]))
    compaction = collected.row["ng_agent_observations"]["records"][1]
    assert [call["model_call_id"] for call in compaction["model_calls"]] == linked


def test_claude_code_rule_reads_an_empty_id_as_none() -> None:
    model_ref = ModelRef(**MODEL_REF)
    ref = ref_name(ModelCallRef(model_call_id="", model_ref=model_ref, response_id="r1"))
    assert names_call(ref, typed_name(None, model_ref, "r1"))
    assert names_call(ref, typed_name("c1", model_ref, "r1"))
    assert not names_call(ref, typed_name("", model_ref, "r2"))
    assert names_call(ref_name(ModelCallRef(model_call_id="c1", response_id="r9")), typed_name("c1", None, None))


_IDS = st.sampled_from([None, "", "c1", "c2"])
_RESPONSE_IDS = st.sampled_from([None, "", "r1", "r2"])
_MODEL_REFS = st.sampled_from([None, MODEL_REF, {"type": "responses_api_models", "name": "judge"}])


@settings(max_examples=200, deadline=None)
@given(
    calls=st.lists(st.tuples(_IDS, _MODEL_REFS, _RESPONSE_IDS), max_size=6),
    refs=st.lists(st.tuples(_IDS, _MODEL_REFS, _RESPONSE_IDS), max_size=6),
)
def test_typed_and_json_names_resolve_alike(calls: list[tuple[Any, Any, Any]], refs: list[tuple[Any, Any, Any]]) -> None:
    """Health and the capability matrix read JSON, the join and ng_perf read models: one answer."""
    typed = CallIndex([typed_name(i, None if m is None else ModelRef(**m), r) for i, m, r in calls])
    as_json = CallIndex([json_name(i, m, r) for i, m, r in calls])
    for call_id, model_ref, response_id in refs:
        ref = {"model_call_id": call_id, "model_ref": model_ref, "response_id": response_id}
        assert typed.candidates(
            ref_name(
                ModelCallRef.model_construct(
                    model_call_id=call_id,
                    model_ref=None if model_ref is None else ModelRef(**model_ref),
                    response_id=response_id,
                )
            )
        ) == as_json.candidates(json_ref_name(ref))
