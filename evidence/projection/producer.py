"""Step 1: take over a producer-supplied ``ng_trajectory`` (collection.md §8.2).

An agent may send its own trajectory; a row collected before carries the previous projection in
the same key, and it is read the same way (that is why re-collection carries old gaps forward,
§11).
"""

from __future__ import annotations

from typing import Any

from evidence.gaps import PRODUCER_TRAJECTORY_IDENTITY_MISMATCH, PRODUCER_TRAJECTORY_INVALID
from evidence.models.trajectory import TrajectoryRecord
from evidence.projection.draft import Draft, gap

__all__ = ["read_producer_trajectory"]


def read_producer_trajectory(raw: Any, task_id: str, rollout_id: str, draft: Draft) -> None:
    """Seed ``draft`` from a valid producer trajectory, or record why it was not used.

    A non-object value is ignored without a gap (it is simply replaced later). 0.7.0 catches any
    exception here and records its class name, so this does too.
    """
    if not isinstance(raw, dict):
        return
    try:
        producer = TrajectoryRecord.model_validate(raw)
    except Exception as exc:  # noqa: BLE001 - 0.7.0 turns any failure into this gap
        draft.gaps.append(gap(PRODUCER_TRAJECTORY_INVALID, detail=type(exc).__name__))
        return
    mismatched = [
        name
        for name, theirs, ours in (
            ("task_id", producer.task_id, task_id),
            ("rollout_id", producer.rollout_id, rollout_id),
        )
        if theirs != ours
    ]
    turns = list(producer.turns)
    if mismatched:
        draft.gaps.append(gap(PRODUCER_TRAJECTORY_IDENTITY_MISMATCH, detail=",".join(mismatched)))
        turns = [turn.model_copy(update={"task_id": task_id, "rollout_id": rollout_id}) for turn in turns]
    draft.gaps.extend(producer.gaps)
    draft.invocations.extend(producer.invocations)
    draft.turns.extend(turns)
    draft.tool_calls.extend(producer.tool_calls)
    draft.model_calls.extend(producer.model_calls)
    draft.producer_read = True
