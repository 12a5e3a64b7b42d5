"""Per-rollout ``ng_perf`` built from the row's ``ng_trajectory`` (spec: collection.md §9).

Only calls an invocation uniquely owns count: a ref matching several calls, or a call already
claimed by an earlier ref, adds nothing, so token sums are never double counted.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import ValidationError

from evidence.models.observations import ModelCallRef
from evidence.models.trajectory import TrajectoryModelCall, TrajectoryRecord

__all__ = ["attach_ng_perf", "build_ng_perf", "owned_calls"]

# ng_perf key <- token_stats field, in output order
_TOKEN_SUMS = (
    ("prompt_tokens", "prompt_tokens"),
    ("cached_prompt_tokens", "cached_tokens"),
    ("completion_tokens", "completion_tokens"),
    ("reasoning_tokens", "reasoning_tokens"),
)
_Triple = tuple[str, str, str]


def attach_ng_perf(result: dict[str, Any], rollout_latency_ms: float | None) -> None:
    """Replace ``result["ng_perf"]`` when one can be built; otherwise leave the old one alone.

    0.7.0 never removes a stale ``ng_perf`` and swallows any build error.
    """
    try:
        perf = build_ng_perf(result.get("ng_trajectory"), rollout_latency_ms)
    except Exception:  # noqa: BLE001 - 0.7.0 attaches nothing on any failure
        return
    if perf is not None:
        result["ng_perf"] = perf


def build_ng_perf(trajectory: Any, rollout_latency_ms: float | None) -> dict[str, Any] | None:
    """``ng_perf`` of a trajectory, or None when it is not a valid record with invocations.

    ``rollout_latency_ms`` is the wall clock of the rollout (an int stays an int).
    """
    if not isinstance(trajectory, dict):
        return None
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
    by_id: dict[str, list[int]] = {}
    by_triple: dict[_Triple, list[int]] = {}
    for position, call in enumerate(record.model_calls):
        if call.model_call_id:
            by_id.setdefault(call.model_call_id, []).append(position)
        triple = _triple(call)
        if triple is not None:
            by_triple.setdefault(triple, []).append(position)
    owners: dict[int, str] = {}
    for invocation in record.invocations:
        for ref in invocation.model_calls:
            candidates = _candidates(ref, record.model_calls, by_id, by_triple)
            if len(candidates) == 1 and candidates[0] not in owners:
                owners[candidates[0]] = invocation.invocation_id
    return owners


def _triple(call: TrajectoryModelCall) -> _Triple | None:
    metadata = call.response_metadata
    if metadata.model_ref is None or not metadata.response_id:
        return None
    return (metadata.model_ref.type, metadata.model_ref.name, metadata.response_id)


def _candidates(
    ref: ModelCallRef,
    calls: list[TrajectoryModelCall],
    by_id: dict[str, list[int]],
    by_triple: dict[_Triple, list[int]],
) -> list[int]:
    if ref.model_call_id:
        return [
            position
            for position in by_id.get(ref.model_call_id, [])
            if (ref.model_ref is None or _ref_key(calls[position]) == (ref.model_ref.type, ref.model_ref.name))
            and (ref.response_id is None or calls[position].response_metadata.response_id == ref.response_id)
        ]
    if ref.model_ref is not None and ref.response_id:
        return by_triple.get((ref.model_ref.type, ref.model_ref.name, ref.response_id), [])
    return []


def _ref_key(call: TrajectoryModelCall) -> tuple[str, str] | None:
    model_ref = call.response_metadata.model_ref
    return None if model_ref is None else (model_ref.type, model_ref.name)
