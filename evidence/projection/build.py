"""The ``ng_trajectory`` projection of one row: steps 1–7 of collection.md §8 in 0.7.0's order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evidence.identity import trajectory_identity
from evidence.models.observations import AgentObservationBundle
from evidence.models.trajectory import TrajectoryRecord
from evidence.projection.draft import Draft
from evidence.projection.gaps import capture_gaps, deduplicated, synthesized_gaps
from evidence.projection.model_calls import merge_capture_calls
from evidence.projection.observations import merge_bundle, merge_observations
from evidence.projection.producer import read_producer_trajectory
from evidence.projection.turns import synthesize_turns

__all__ = ["build_joined_trajectory", "build_trajectory"]


def build_trajectory(row: Mapping[str, Any], result: Mapping[str, Any]) -> TrajectoryRecord:
    """Project ``result``'s evidence into a validated trajectory record.

    The identity is read from the dispatched ``row`` and everything else from ``result``, as in
    0.7.0. Raises whatever 0.7.0 raises (identity ``KeyError``, ``ValidationError`` of the
    record, ``AttributeError`` from a malformed chat body): the caller turns it into the
    ``trajectory_projection_failed`` fallback.
    """
    return build_joined_trajectory(row, result, None)


def build_joined_trajectory(row: Mapping[str, Any], result: Mapping[str, Any], joined: AgentObservationBundle | None) -> TrajectoryRecord:
    """:func:`build_trajectory`, given the joined bundle whose JSON-mode dump is
    ``result["ng_agent_observations"]`` when the caller holds it (the capture merge's join);
    with None, that value is validated as 0.7.0 does.

    The bundle stands for its dump validated again, which is what 0.7.0 projects: every
    observation field reads its own JSON form back as the same value, and each conversation
    item picks its own model again (its dump carries the tag). The only value a dump changes,
    a non-finite float in untyped content (made null), cannot come from a row orjson parsed.
    """
    task_id, rollout_id = trajectory_identity(row)
    draft = Draft()
    producer = result.get("ng_trajectory")
    read_producer_trajectory(producer, task_id, rollout_id, draft)
    if joined is None:
        merge_observations(result.get("ng_agent_observations"), draft)
    else:
        merge_bundle(joined, draft)
    draft.turns.sort(key=lambda turn: (turn.timestamp, turn.invocation_id, turn.turn_no))
    capture = result.get("ng_model_call_capture")
    capture = capture if isinstance(capture, dict) else {}
    merge_capture_calls(capture, draft)
    draft.gaps.extend(capture_gaps(capture))
    if not isinstance(producer, dict):
        draft.turns = synthesize_turns(draft.model_calls, draft.invocations, result.get("resolved"), (task_id, rollout_id))
    draft.gaps.extend(synthesized_gaps(draft))
    return TrajectoryRecord(
        task_id=task_id,
        rollout_id=rollout_id,
        invocations=draft.invocations,
        turns=draft.turns,
        model_calls=draft.model_calls,
        tool_calls=draft.tool_calls,
        gaps=deduplicated(draft.gaps),
    )
