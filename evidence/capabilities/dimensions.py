"""The seven capability dimensions: how each is measured on one rollout, as an ordered table.

Each measure returns an :class:`Outcome`: *present* (some of the evidence exists) and
*complete* (all of it), with reason codes naming exactly what is missing. The table also lists,
per dimension, the 0.7.0 gap codes that can explain a shortfall (spec collection §12 and the
producer codes that pass through). Adding a dimension = one function + one table entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from evidence.capabilities.rollout import RolloutEvidence
from evidence.capabilities.values import as_dict, as_list, is_count, is_int, is_number, nonempty_str
from evidence.gaps import (
    AGENT_OBSERVATION_JOIN_FAILED,
    AGENT_OBSERVATIONS_INVALID,
    CONVERSATION_UNAVAILABLE,
    MODEL_CALL_CAPTURE_INCOMPLETE,
    MODEL_CALL_CAPTURE_NO_RECORDS,
    MODEL_CALL_CAPTURE_RECORDS_UNREADABLE,
    MODEL_CALL_CAPTURE_UNREADABLE,
    MODEL_CALL_OWNERSHIP_UNAVAILABLE,
    MODEL_CALL_REFERENCE_AMBIGUOUS,
    MODEL_CALL_REFERENCE_CONFLICT,
    MODEL_CALL_REFERENCE_UNMATCHED,
    MODEL_CALLS_UNAVAILABLE,
    MULTIMODAL_HISTORY_REDACTED,
    PRODUCER_TRAJECTORY_INVALID,
    SANDBOX_RESOURCE_USAGE_UNAVAILABLE,
    TOOL_OUTPUT_UNAVAILABLE,
    TOOL_TIMING_UNAVAILABLE,
    TRAJECTORY_PROJECTION_FAILED,
    TURN_MODEL_CALL_SCOPE_INCOMPLETE,
    TURNS_UNAVAILABLE,
)
from evidence.health.calls import call_successful

__all__ = ["DIMENSIONS", "DIMENSION_LABELS", "MEASURES", "Outcome"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One dimension for one rollout; ``reasons`` is empty exactly when ``complete``."""

    present: bool
    complete: bool
    reasons: tuple[str, ...] = ()


def _outcome(present: bool, reasons: list[str]) -> Outcome:
    return Outcome(present, present and not reasons, tuple(reasons))


def _per_call_metadata(ev: RolloutEvidence) -> Outcome:
    """Owned calls carry a model_call_id, a model_ref and response metadata (status + model)."""
    if not ev.owned_calls:
        return Outcome(False, False, (_no_owned_calls_reason(ev),))
    metadata = [as_dict(call.get("response_metadata")) for call in ev.owned_calls]
    reasons = []
    if not all(nonempty_str(call.get("model_call_id")) for call in ev.owned_calls):
        reasons.append("model_call_id_missing")
    if any(md.get("model_ref") is None for md in metadata):
        reasons.append("model_ref_missing")
    if not all(is_int(md.get("status_code")) and nonempty_str(md.get("model")) for md in metadata):
        reasons.append("response_metadata_missing")
    return _outcome(True, reasons)


def _token_counts(ev: RolloutEvidence) -> Outcome:
    """Every successful owned call reports prompt and completion counts (failed calls owe none)."""
    if not ev.owned_calls:
        return Outcome(False, False, (_no_owned_calls_reason(ev),))
    counted = [_has_token_counts(call) for call in ev.owned_calls]
    owed = [has for call, has in zip(ev.owned_calls, counted, strict=True) if _is_successful(call)]
    complete = any(counted) and all(owed)
    return Outcome(any(counted), complete, () if complete else ("token_counts_missing",))


def _model_visible_history(ev: RolloutEvidence) -> Outcome:
    """Every invocation carries a non-empty conversation and no history was redacted."""
    with_history = [bool(as_list(inv.get("conversation"))) for inv in ev.invocations]
    if not any(with_history):
        return Outcome(False, False, (CONVERSATION_UNAVAILABLE,))
    reasons = [] if all(with_history) else ["conversation_missing"]
    if MULTIMODAL_HISTORY_REDACTED in ev.gap_codes:
        reasons.append(MULTIMODAL_HISTORY_REDACTED)
    return _outcome(True, reasons)


def _semantic_turns(ev: RolloutEvidence) -> Outcome:
    """The producer supplied the turns: none rebuilt from model calls, none missing."""
    if not ev.turns:
        return Outcome(False, False, (TURNS_UNAVAILABLE,))
    explicit = [not ev.is_synthesized_turn(turn) for turn in ev.turns]
    reasons = [] if all(explicit) else ["turns_synthesized"]
    if ev.invocations_owning_calls - {turn.get("invocation_id") for turn in ev.turns}:
        reasons.append("invocation_turns_missing")
    return _outcome(any(explicit), reasons)


def _tool_execution(ev: RolloutEvidence) -> Outcome:
    """Every tool call the model asked for has an execution record with a status and an output."""
    if not ev.tool_records:
        return _without_tool_records(ev)
    reasons = []
    if ev.requested_tool_call_ids - ev.recorded_tool_call_ids:
        reasons.append("tool_calls_unrecorded")
    if any(record.get("status") in (None, "unknown") for record in ev.tool_records):
        reasons.append("tool_status_unknown")
    if any(record.get("output") is None for record in ev.tool_records):
        reasons.append("tool_output_missing")
    return _outcome(True, reasons)


def _parallel_timing(ev: RolloutEvidence) -> Outcome:
    """Every tool record has its own measured interval, so overlapping calls can be seen."""
    if not ev.tool_records:
        return _without_tool_records(ev)
    intervals = [_interval(record) for record in ev.tool_records]
    reasons = [] if all(intervals) else ["tool_timing_missing"]
    if _has_shared_interval(ev.tool_records, intervals):
        reasons.append("tool_timing_shared")
    return _outcome(any(intervals), reasons)


def _sandbox(ev: RolloutEvidence) -> Outcome:
    """A sandbox record exists and every one reports wall time, CPU time and peak memory."""
    if not ev.sandbox_records:
        return Outcome(False, False, ("sandbox_unavailable",))
    measured = [all(is_number(record.get(key)) for key in _USAGE_KEYS) for record in ev.sandbox_records]
    complete = all(measured)
    return Outcome(any(measured), complete, () if complete else ("sandbox_usage_missing",))


_USAGE_KEYS = ("wall_time_s", "cpu_time_s", "peak_memory_mib")

# 0.7.0 gap codes saying the trajectory as a whole could not be built or trusted.
_TRAJECTORY_GAPS = frozenset({TRAJECTORY_PROJECTION_FAILED, PRODUCER_TRAJECTORY_INVALID, AGENT_OBSERVATIONS_INVALID})
_OBSERVATION_GAPS = _TRAJECTORY_GAPS | {AGENT_OBSERVATION_JOIN_FAILED}
# 0.7.0 gap codes saying the captured model-call list is short or unreadable.
_CAPTURE_GAPS = frozenset(
    {
        MODEL_CALL_CAPTURE_NO_RECORDS,
        MODEL_CALL_CAPTURE_RECORDS_UNREADABLE,
        MODEL_CALL_CAPTURE_INCOMPLETE,
        MODEL_CALL_CAPTURE_UNREADABLE,
        MODEL_CALLS_UNAVAILABLE,
        AGENT_OBSERVATION_JOIN_FAILED,
    }
)
# 0.7.0 gap codes saying calls could not be attributed to the agent's invocations.
_REFERENCE_GAPS = frozenset(
    {
        MODEL_CALL_REFERENCE_UNMATCHED,
        MODEL_CALL_REFERENCE_AMBIGUOUS,
        MODEL_CALL_REFERENCE_CONFLICT,
        MODEL_CALL_OWNERSHIP_UNAVAILABLE,
    }
)
_CALL_GAPS = _TRAJECTORY_GAPS | _CAPTURE_GAPS | _REFERENCE_GAPS

Measure = Callable[[RolloutEvidence], Outcome]

# dimension -> (measure, 0.7.0 gap codes that can explain its shortfall). The insertion order
# is the matrix's fixed column order, the order of Gym's own capability page.
MEASURES: Mapping[str, tuple[Measure, frozenset[str]]] = MappingProxyType(
    {
        "per_call_metadata": (_per_call_metadata, _CALL_GAPS),
        "token_counts": (_token_counts, _CALL_GAPS | {TURN_MODEL_CALL_SCOPE_INCOMPLETE}),
        "model_visible_history": (
            _model_visible_history,
            _OBSERVATION_GAPS | {CONVERSATION_UNAVAILABLE, MULTIMODAL_HISTORY_REDACTED},
        ),
        "semantic_turns": (_semantic_turns, _TRAJECTORY_GAPS | {TURNS_UNAVAILABLE}),
        "tool_execution": (_tool_execution, _OBSERVATION_GAPS | _CAPTURE_GAPS | {TOOL_OUTPUT_UNAVAILABLE}),
        "parallel_timing": (_parallel_timing, _OBSERVATION_GAPS | _CAPTURE_GAPS | {TOOL_TIMING_UNAVAILABLE}),
        "sandbox": (_sandbox, _OBSERVATION_GAPS | {SANDBOX_RESOURCE_USAGE_UNAVAILABLE}),
    }
)

DIMENSIONS: tuple[str, ...] = tuple(MEASURES)

DIMENSION_LABELS: Mapping[str, str] = MappingProxyType(
    {
        "per_call_metadata": "Per-call metadata",
        "token_counts": "Token counts",
        "model_visible_history": "Model-visible history",
        "semantic_turns": "Semantic turns",
        "tool_execution": "Tool execution",
        "parallel_timing": "Parallel timing",
        "sandbox": "Resource/sandbox evidence",
    }
)
assert tuple(DIMENSION_LABELS) == DIMENSIONS


def _no_owned_calls_reason(ev: RolloutEvidence) -> str:
    return "model_calls_unowned" if ev.calls else MODEL_CALLS_UNAVAILABLE


def _without_tool_records(ev: RolloutEvidence) -> Outcome:
    """No tool records: complete when the captured calls show no tool use, else a shortfall."""
    if ev.requested_tool_call_ids or ev.requested_tool_calls_without_id:
        return Outcome(False, False, ("tool_calls_unrecorded",))
    if not ev.captured_call_count:
        return Outcome(False, False, ("tool_use_unknown",))
    return Outcome(True, True)


def _has_shared_interval(records: list[dict[str, Any]], intervals: list[tuple[float, float] | None]) -> bool:
    """Two tool records of one invocation with the very same interval were timed as a batch."""
    seen = set()
    for record, interval in zip(records, intervals, strict=True):
        if interval is None:
            continue
        key = (record.get("invocation_id"), interval)
        if key in seen:
            return True
        seen.add(key)
    return False


def _interval(record: Mapping[str, Any]) -> tuple[float, float] | None:
    start, end = record.get("started_at"), record.get("completed_at")
    if is_number(start) and is_number(end) and end >= start:
        return (float(start), float(end))
    return None


def _has_token_counts(call: Mapping[str, Any]) -> bool:
    stats = as_dict(call.get("token_stats"))
    return is_count(stats.get("prompt_tokens")) and is_count(stats.get("completion_tokens"))


def _is_successful(call: Mapping[str, Any]) -> bool:
    md = as_dict(call.get("response_metadata"))
    return call_successful(md.get("status_code"), md.get("error_category"), md.get("response_status"))
