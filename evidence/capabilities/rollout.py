"""The facts of one enriched row that the capability dimensions are measured on.

Reading the row once into :class:`RolloutEvidence` keeps each dimension a few lines of plain
predicates, and keeps the two non-obvious derivations in one place: which model calls the
agent *owns* (0.7.0's ``ng_perf`` rule) and which turns 0.7.0 *rebuilt* from model calls
rather than received from the producer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evidence.capabilities.values import as_dict, as_list, dicts, nonempty_str
from evidence.references import CallIndex, json_name, json_ref_name, ng_perf_owners

__all__ = ["RolloutEvidence", "rollout_evidence"]


@dataclass(frozen=True, slots=True)
class RolloutEvidence:
    """What one rollout's evidence contains; every list is the row's own objects, in order."""

    trajectory: Mapping[str, Any] | None
    invocations: list[dict[str, Any]]
    turns: list[dict[str, Any]]
    calls: list[dict[str, Any]]
    owned_calls: list[dict[str, Any]]
    invocations_owning_calls: frozenset[Any]
    tool_records: list[dict[str, Any]]
    requested_tool_call_ids: frozenset[str]
    requested_tool_calls_without_id: int
    captured_call_count: int
    sandbox_records: list[dict[str, Any]]
    gap_codes: frozenset[str]
    rebuilt_turns: list[tuple[dict[str, Any], Any]]
    """Per call, the model-call ref and timestamp of the turn 0.7.0 rebuilds from it (spec §8.7)."""

    @property
    def recorded_tool_call_ids(self) -> frozenset[str]:
        """Ids of the tool calls that have an execution record."""
        ids = (record.get("tool_call_id") for record in self.tool_records)
        return frozenset(i for i in ids if nonempty_str(i))

    def is_synthesized_turn(self, turn: Mapping[str, Any]) -> bool:
        """True when the turn is exactly what 0.7.0 builds from one model call (spec §8.7).

        Such a turn references one call by that call's own (model_call_id, model_ref,
        response_id) and carries its ``started_at or completed_at or 0.0`` as timestamp. The
        enriched row does not say where turns came from, and an earlier collection's rebuilt
        turns are carried forward as if produced (§11), so the shape is the only reliable sign;
        a producer turn identical to a rebuilt one adds nothing a rebuilt one would not.
        """
        refs = as_list(turn.get("model_calls"))
        if len(refs) != 1:
            return False
        timestamp = turn.get("timestamp")
        return any(refs[0] == ref and timestamp == rebuilt for ref, rebuilt in self.rebuilt_turns)


def rollout_evidence(row: Mapping[str, Any]) -> RolloutEvidence:
    """Read the capability-relevant facts of an enriched row; never raises on odd shapes."""
    trajectory = row.get("ng_trajectory")
    trajectory = trajectory if isinstance(trajectory, dict) else None
    traj = as_dict(trajectory)
    invocations = dicts(traj.get("invocations"))
    calls = dicts(traj.get("model_calls"))
    owners = _owners(invocations, calls)
    captured = dicts(as_dict(row.get("ng_model_call_capture")).get("calls"))
    requested = [tool for call in captured for tool in dicts(call.get("tool_calls"))]
    requested_ids = frozenset(t["call_id"] for t in requested if nonempty_str(t.get("call_id")))
    return RolloutEvidence(
        trajectory=trajectory,
        invocations=invocations,
        turns=dicts(traj.get("turns")),
        calls=calls,
        owned_calls=[calls[position] for position in sorted(owners)],
        invocations_owning_calls=frozenset(owners.values()),
        tool_records=dicts(traj.get("tool_calls")),
        requested_tool_call_ids=requested_ids,
        requested_tool_calls_without_id=sum(not nonempty_str(t.get("call_id")) for t in requested),
        captured_call_count=len(captured),
        sandbox_records=[
            record for record in dicts(as_dict(row.get("ng_agent_observations")).get("records")) if record.get("kind") == "sandbox"
        ],
        gap_codes=_gap_codes(row, trajectory),
        rebuilt_turns=[(_canonical_ref(call), _synthesized_timestamp(call)) for call in calls],
    )


def _gap_codes(row: Mapping[str, Any], trajectory: Mapping[str, Any] | None) -> frozenset[str]:
    """The trajectory's gap codes; without a trajectory, those left on the attachments (§8.11)."""
    if trajectory is not None:
        gaps = dicts(trajectory.get("gaps"))
    else:
        gaps = dicts(as_dict(row.get("ng_model_call_capture")).get("gaps"))
        gaps += dicts(as_dict(row.get("ng_agent_observations")).get("gaps"))
    return frozenset(gap["code"] for gap in gaps if isinstance(gap.get("code"), str))


def _owners(invocations: list[dict[str, Any]], calls: list[dict[str, Any]]) -> dict[int, Any]:
    """Map call position -> owning invocation id, by 0.7.0's ng_perf rule (spec §9).

    The row's own JSON, read as found (``evidence.references.json_name``); turn refs confer
    nothing.
    """
    index = CallIndex(
        [json_name(call.get("model_call_id"), _metadata(call).get("model_ref"), _metadata(call).get("response_id")) for call in calls]
    )
    refs = ((inv.get("invocation_id"), map(json_ref_name, dicts(inv.get("model_calls")))) for inv in invocations)
    return ng_perf_owners(index, refs)


def _metadata(call: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_dict(call.get("response_metadata"))


def _canonical_ref(call: Mapping[str, Any]) -> dict[str, Any]:
    metadata = _metadata(call)
    return {
        "model_call_id": call.get("model_call_id"),
        "model_ref": metadata.get("model_ref"),
        "response_id": metadata.get("response_id"),
    }


def _synthesized_timestamp(call: Mapping[str, Any]) -> Any:
    return call.get("started_at") or call.get("completed_at") or 0.0
