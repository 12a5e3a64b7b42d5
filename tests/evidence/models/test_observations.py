"""Observation bundle validation (collection.md §6.1, §8.9): what makes a bundle invalid."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from evidence.models.observations import AgentObservationBundle


def invocation(invocation_id: str, parent: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"kind": "agent_invocation", "invocation_id": invocation_id, "parent_invocation_id": parent, **extra}


@pytest.mark.parametrize(
    "records",
    [
        [invocation("a"), invocation("a")],
        [invocation("a", "b"), invocation("b", "a")],
        [invocation("a", "a")],
        [invocation("a", surprise=1)],
        [invocation("a", model_calls=[{"response_id": "r"}])],
        [invocation("a", conversation=["text"])],
        [invocation("a", conversation=[{"type": "no_such_item"}])],
        [invocation("a", conversation=[{"type": "message", "role": "tool", "content": "x"}])],
        [invocation("a", duration_ms=-1)],
        [{"kind": "tool_call", "invocation_id": "a", "tool_call_id": "t", "started_at": 2, "completed_at": 1}],
        [{"invocation_id": "a"}],
    ],
)
def test_invalid_bundles(records: list[dict[str, Any]]) -> None:
    with pytest.raises(ValidationError):
        AgentObservationBundle.model_validate({"source": "s", "records": records})


def test_missing_parents_are_fine_and_defaults_are_dumped() -> None:
    bundle = AgentObservationBundle.model_validate({"source": "s", "records": [invocation("a", "elsewhere")]})
    assert bundle.as_json()["records"][0] == {
        "kind": "agent_invocation",
        "invocation_id": "a",
        "parent_invocation_id": "elsewhere",
        "spawned_by_tool_call_id": None,
        "status": "unknown",
        "duration_ms": None,
        "error_type": None,
        "model_calls": [],
        "conversation": [],
    }
