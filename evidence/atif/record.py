"""Strict v1.0 ``TrajectoryRecord`` validation, as 0.7.0 parses ``ng_trajectory`` for export.

0.7.0 validates the record with pydantic in strict mode (no coercion; ints are accepted where
floats are expected; unknown keys forbidden) and collapses every failure into one message.
We check the same shape with predicates over the decoded dicts and keep the dicts: the
converter reads them directly, applying the model defaults where it needs them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from evidence.atif.items import InvalidItem, Item, parse_items, strict_float
from evidence.errors import AtifExportError

__all__ = [
    "INVALID_TRAJECTORY",
    "MODEL_CALL_FIELDS",
    "RESPONSE_METADATA_FIELDS",
    "TOKEN_FIELDS",
    "parse_record",
]

INVALID_TRAJECTORY = "ng_trajectory: missing or invalid v1.0 trajectory"

Check = Callable[[Any], bool]
_OPTIONAL = False
_REQUIRED = True


def _is_str(value: Any) -> bool:
    return type(value) is str


def _is_int(value: Any) -> bool:
    return type(value) is int


def _is_bool(value: Any) -> bool:
    return type(value) is bool


def _any(_value: Any) -> bool:
    return True


def _int_at_least(low: int) -> Check:
    return lambda value: type(value) is int and value >= low


def _number_at_least_zero(value: Any) -> bool:
    return strict_float(value) and value >= 0


def _nullable(check: Check) -> Check:
    return lambda value: value is None or check(value)


def _literal(*allowed: str) -> Check:
    return lambda value: type(value) is str and value in allowed


def _list_of(check: Check) -> Check:
    return lambda value: type(value) is list and all(check(x) for x in value)


Spec = Mapping[str, tuple[Check, bool]]


def _model(spec: Spec, extra: Callable[[dict[str, Any]], bool] | None = None) -> Check:
    """An ``extra="forbid"`` object check; ``extra`` adds the model's own validator."""

    def check(value: Any) -> bool:
        if type(value) is not dict or not value.keys() <= spec.keys():
            return False
        for key, (field_check, required) in spec.items():
            if key in value:
                if not field_check(value[key]):
                    return False
            elif required:
                return False
        return extra is None or extra(value)

    return check


def _opt(check: Check) -> tuple[Check, bool]:
    return (_nullable(check), _OPTIONAL)


_OPT_STR = _opt(_is_str)
_OPT_TIME = _opt(strict_float)
_OPT_DURATION = _opt(_number_at_least_zero)
_OPT_COUNT = _opt(_int_at_least(0))


def _server_ref(value: Any) -> bool:
    """``ModelServerRef`` ignores unknown keys (the preflight forbids them)."""
    return type(value) is dict and value.get("type") == "responses_api_models" and "name" in value and _is_str(value["name"])


def _usable_ref(ref: dict[str, Any]) -> bool:
    if ref.get("model_call_id"):
        return True
    return ref.get("model_ref") is not None and bool(ref.get("response_id"))


_MODEL_CALL_REF = _model(
    {"model_call_id": _OPT_STR, "model_ref": _opt(_server_ref), "response_id": _OPT_STR},
    _usable_ref,
)

# Declaration order matters: the exported ``model_call`` dump follows it.
RESPONSE_METADATA_FIELDS: Spec = {
    "response_id": _OPT_STR,
    "model_ref": _opt(_server_ref),
    "model": _OPT_STR,
    "dialect": _OPT_STR,
    "status_code": _opt(_is_int),
    "response_status": _OPT_STR,
    "finish_reason": _OPT_STR,
    "upstream_attempted": _opt(_is_bool),
    "response_source": _opt(_literal("upstream", "local")),
    "upstream_status_code": _opt(_is_int),
    "local_response_reason": _OPT_STR,
    "error_category": _OPT_STR,
    "latency_ttft_ms": _OPT_DURATION,
}
TOKEN_FIELDS = ("prompt_tokens", "completion_tokens", "reasoning_tokens", "total_tokens", "cached_tokens")
MODEL_CALL_FIELDS: Spec = {
    "model_call_id": _OPT_STR,
    "started_at": _OPT_TIME,
    "completed_at": _OPT_TIME,
    "duration_ms": _OPT_DURATION,
    "request": (_any, _OPTIONAL),
    "response": (_any, _OPTIONAL),
    "response_metadata": (_model(RESPONSE_METADATA_FIELDS), _OPTIONAL),
    "token_stats": (_model(dict.fromkeys(TOKEN_FIELDS, _OPT_COUNT)), _OPTIONAL),
}


_INVOCATION = _model(
    {
        "kind": (_literal("agent_invocation"), _OPTIONAL),
        "invocation_id": (_is_str, _REQUIRED),
        "parent_invocation_id": _OPT_STR,
        "spawned_by_tool_call_id": _OPT_STR,
        "status": (_literal("completed", "failed", "incomplete", "unknown"), _OPTIONAL),
        "duration_ms": _OPT_DURATION,
        "error_type": _OPT_STR,
        "model_calls": (_list_of(_MODEL_CALL_REF), _OPTIONAL),
        "conversation": (_any, _OPTIONAL),  # parsed by parse_record, which keeps the root's
    }
)
_TURN = _model(
    {
        "invocation_id": (_is_str, _REQUIRED),
        "task_id": (_is_str, _REQUIRED),
        "rollout_id": (_is_str, _REQUIRED),
        "turn_no": (_int_at_least(1), _REQUIRED),
        "timestamp": (strict_float, _REQUIRED),
        "question": (_any, _OPTIONAL),
        "answer": (_any, _OPTIONAL),
        "reasoning_content": (_any, _OPTIONAL),
        "resolved": _opt(_is_bool),
        "step_count": (_int_at_least(0), _REQUIRED),
        "model_calls": (_list_of(_MODEL_CALL_REF), _OPTIONAL),
    }
)


def _ordered_times(call: dict[str, Any]) -> bool:
    started, completed = call.get("started_at"), call.get("completed_at")
    return started is None or completed is None or completed >= started


_TOOL_CALL = _model(
    {
        "kind": (_literal("tool_call"), _OPTIONAL),
        "invocation_id": (_is_str, _REQUIRED),
        "tool_call_id": (_is_str, _REQUIRED),
        "sandbox_id": _OPT_STR,
        "tool_name": _OPT_STR,
        "started_at": _OPT_TIME,
        "completed_at": _OPT_TIME,
        "duration_ms": _OPT_DURATION,
        "timing_source": _opt(_literal("executor", "artifact", "harness")),
        "status": (
            _literal("completed", "failed", "timeout", "cancelled", "incomplete", "unknown"),
            _OPTIONAL,
        ),
        "error_type": _OPT_STR,
        "output": (_any, _OPTIONAL),
    },
    _ordered_times,
)
_GAP = _model({"code": (_is_str, _REQUIRED), "invocation_id": _OPT_STR, "detail": _OPT_STR})


def _unique(values: list[Any]) -> bool:
    return len(values) == len(set(values))


def _record_rules(record: dict[str, Any]) -> bool:
    """The record-level validator: unique ids, turns belonging to this rollout."""
    invocations = record.get("invocations", [])
    turns = record.get("turns", [])
    call_ids = [c.get("model_call_id") for c in record.get("model_calls", [])]
    return (
        _unique([inv["invocation_id"] for inv in invocations])
        and _unique([cid for cid in call_ids if cid])
        and all(t["task_id"] == record["task_id"] and t["rollout_id"] == record["rollout_id"] for t in turns)
        and _unique([(t["invocation_id"], t["turn_no"]) for t in turns])
    )


_RECORD = _model(
    {
        "schema_version": (_literal("1.0"), _OPTIONAL),
        "task_id": (_is_str, _REQUIRED),
        "rollout_id": (_is_str, _REQUIRED),
        "invocations": (_list_of(_INVOCATION), _OPTIONAL),
        "turns": (_list_of(_TURN), _OPTIONAL),
        "model_calls": (_list_of(_model(MODEL_CALL_FIELDS)), _OPTIONAL),
        "tool_calls": (_list_of(_TOOL_CALL), _OPTIONAL),
        "gaps": (_list_of(_GAP), _OPTIONAL),
    },
    _record_rules,
)


def parse_record(trajectory: Any) -> list[Item]:
    """Validate ``ng_trajectory`` strictly; return the first invocation's parsed conversation.

    Raises ``AtifExportError`` with 0.7.0's single parse message on any violation. An empty
    list is returned when there is no invocation (the caller reports the count).
    """
    if not _RECORD(trajectory):
        raise AtifExportError(INVALID_TRAJECTORY)
    try:
        conversations = [parse_items(invocation.get("conversation", [])) for invocation in trajectory.get("invocations", [])]
    except InvalidItem:
        raise AtifExportError(INVALID_TRAJECTORY) from None
    return conversations[0] if conversations else []
