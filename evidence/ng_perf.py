"""Per-rollout ``ng_perf`` built from the row's ``ng_trajectory`` (spec: collection.md §9).

Only calls an invocation uniquely owns count (``evidence.references.ng_perf_owners``), so token
sums are never double counted.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import ValidationError

from evidence.models.trajectory import TrajectoryRecord
from evidence.references import CallIndex, ng_perf_owners, ref_name, typed_name

__all__ = ["attach_ng_perf", "build_ng_perf", "owned_calls"]

# ng_perf key <- token_stats field, in output order
_TOKEN_SUMS = (
    ("prompt_tokens", "prompt_tokens"),
    ("cached_prompt_tokens", "cached_tokens"),
    ("completion_tokens", "completion_tokens"),
    ("reasoning_tokens", "reasoning_tokens"),
)


def attach_ng_perf(result: dict[str, Any], rollout_latency_ms: float | None, validated: TrajectoryRecord | None = None) -> None:
    """Replace ``result["ng_perf"]`` when one can be built; otherwise leave the old one alone.

    0.7.0 never removes a stale ``ng_perf`` and swallows any build error. ``validated`` is the
    model whose dump ``result["ng_trajectory"]`` is (the projection's), when there is one.
    """
    try:
        perf = build_ng_perf(validated if validated is not None else result.get("ng_trajectory"), rollout_latency_ms)
    except Exception:  # noqa: BLE001 - 0.7.0 attaches nothing on any failure
        return
    if perf is not None:
        result["ng_perf"] = perf


def build_ng_perf(trajectory: Any, rollout_latency_ms: float | None) -> dict[str, Any] | None:
    """``ng_perf`` of a trajectory (a dict, or an already validated record), or None when it
    is not a valid record with invocations.

    ``rollout_latency_ms`` is the wall clock of the rollout (an int stays an int).
    """
    if isinstance(trajectory, TrajectoryRecord):
        record = trajectory
    elif not isinstance(trajectory, dict):
        return None
    else:
        try:
            record = TrajectoryRecord.model_validate(trajectory)
        except ValidationError:
            return None
    if not record.invocations:
        return None
    owners = owned_calls(record)
    owned_per_invocation = Counter(owners.values())
    turns_per_invocation = Counter(turn.invocation_id for turn in record.turns)
    invocation_ids = {invocation.invocation_id for invocation in record.invocations}
    num_turns = sum(
        turns_per_invocation[invocation.invocation_id] or owned_per_invocation[invocation.invocation_id] or 1
        for invocation in record.invocations
    )
    perf: dict[str, Any] = {
        "num_turns": num_turns,
        "num_tool_calls": sum(1 for tool in record.tool_calls if tool.invocation_id in invocation_ids),
        "token_observability_coverage": min(1.0, len(owners) / num_turns),
    }
    owned_stats = [record.model_calls[position].token_stats for position in sorted(owners)]
    for key, field in _TOKEN_SUMS:
        values = [getattr(stats, field) for stats in owned_stats if getattr(stats, field) is not None]
        if values:
            perf[key] = sum(values)
    if rollout_latency_ms is not None:
        perf["total_latency_ms"] = rollout_latency_ms
    return perf


def owned_calls(record: TrajectoryRecord) -> dict[int, str]:
    """Position in ``record.model_calls`` -> invocation id of its unique, first-claiming ref."""
    index = CallIndex(
        [
            typed_name(call.model_call_id, call.response_metadata.model_ref, call.response_metadata.response_id)
            for call in record.model_calls
        ]
    )
    return ng_perf_owners(
        index, ((invocation.invocation_id, [ref_name(ref) for ref in invocation.model_calls]) for invocation in record.invocations)
    )
