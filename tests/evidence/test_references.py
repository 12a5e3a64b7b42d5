"""Reference resolution rules (evidence.references), each as its 0.7.0 path resolves.

The empty-``response_id`` cases were checked by hand against nemo-gym 0.7.0
(``_build_ng_perf`` and ``health.checks._bind_policy_call_views``): a ref's ``response_id`` filters
its id match whenever it is not None, so ``""`` matches only a call whose response id is ``""``.
"""

from __future__ import annotations

from typing import Any

import pytest

from evidence.capabilities.rollout import rollout_evidence
from evidence.health.view import build_view
from evidence.ng_perf import build_ng_perf

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
def test_ng_perf_ownership_filters_on_any_non_null_response_id(
    ref_response_id: str | None, call_response_id: str, matches: bool
) -> None:
    ref = {"model_call_id": "c1", "response_id": ref_response_id}
    perf = build_ng_perf(_trajectory(ref, call_response_id), None)
    assert perf is not None
    assert perf["token_observability_coverage"] == (1.0 if matches else 0.0)
    assert ("prompt_tokens" in perf) is matches


@pytest.mark.parametrize(("ref_response_id", "call_response_id", "matches"), EMPTY_RESPONSE_ID_CASES)
def test_health_binding_filters_on_any_non_null_response_id(
    ref_response_id: str | None, call_response_id: str, matches: bool
) -> None:
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
