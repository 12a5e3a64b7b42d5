"""Attach the projection to a row, or record why it failed (collection.md §8.10, §8.11).

Only top-level keys of ``result`` are assigned: nested containers that change (the capture's
calls, a gaps list) are rebuilt, never edited, so ``result`` may share its nested values with the
caller's input row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evidence.gaps import TRAJECTORY_PROJECTION_FAILED
from evidence.identity import trajectory_identity
from evidence.models.capture import PAYLOAD_KEYS
from evidence.models.trajectory import TrajectoryRecord
from evidence.projection.build import build_trajectory

__all__ = ["attach_trajectory", "trajectory_json"]

_CAPTURE = "ng_model_call_capture"
_OBSERVATIONS = "ng_agent_observations"
_TRAJECTORY = "ng_trajectory"
_UNTYPED = {
    "model_calls": frozenset({"request", "response"}),
    "turns": frozenset({"question", "answer", "reasoning_content"}),
    "tool_calls": frozenset({"output"}),
}
"""The trajectory's untyped (``Any``) fields, by the list of models that holds them."""
_TYPED_ONLY = {name: {"__all__": set(fields)} for name, fields in _UNTYPED.items()}
"""``model_dump``'s ``exclude`` that leaves those fields out."""


def attach_trajectory(row: Mapping[str, Any], result: dict[str, Any]) -> TrajectoryRecord | None:
    """Set ``result["ng_trajectory"]`` and drop the capture payloads; never raises.

    On any failure (0.7.0 catches every exception here) the trajectory is removed and the
    failure is recorded as a gap on the capture or observations object, else as a minimal
    trajectory, else (no identity) nowhere.

    Returns:
        The validated trajectory whose JSON dump was attached (so later steps need not
        validate it again), or None when the projection failed.
    """
    try:
        record = build_trajectory(row, result)
        result[_TRAJECTORY] = trajectory_json(record)
    except Exception as exc:  # noqa: BLE001 - 0.7.0's fallback covers every exception
        result.pop(_TRAJECTORY, None)
        _record_failure(row, result, type(exc).__name__)
        return None
    _strip_payloads(result)
    return record


def trajectory_json(record: TrajectoryRecord) -> dict[str, Any]:
    """``record.model_dump(mode="json")``, with the untyped fields' values themselves instead of copies.

    Those fields hold the conversation (every call's request and response, each turn's
    question and answer): most of a row, and three quarters of the dump's time when pydantic
    walks them. Their values come from orjson-parsed rows and captures, or are lists and dicts
    the projection builds from those, so they are already what a JSON-mode dump makes of
    them (native types, finite floats): sharing them changes no byte and no value.
    """
    dump = record.model_dump(mode="json", exclude=_TYPED_ONLY)
    for name, untyped in _UNTYPED.items():
        dump[name] = [
            {field: getattr(model, field) if field in untyped else typed[field] for field in type(model).model_fields}
            for model, typed in zip(getattr(record, name), dump[name], strict=True)
        ]
    return dump


def _strip_payloads(result: dict[str, Any]) -> None:
    """Remove request/response bodies from the capture's calls; the trajectory now holds them."""
    capture = result.get(_CAPTURE)
    if not isinstance(capture, dict) or not isinstance(capture.get("calls"), list):
        return
    calls = [
        {key: value for key, value in call.items() if key not in PAYLOAD_KEYS} if isinstance(call, dict) else call
        for call in capture["calls"]
    ]
    result[_CAPTURE] = {**capture, "calls": calls}


def _record_failure(row: Mapping[str, Any], result: dict[str, Any], detail: str) -> None:
    target_key = _CAPTURE if isinstance(result.get(_CAPTURE), dict) else _OBSERVATIONS
    target = result.get(target_key)
    if isinstance(target, dict):
        gaps = target.get("gaps", [])
        if isinstance(gaps, list):
            result[target_key] = {**target, "gaps": [*gaps, {"code": TRAJECTORY_PROJECTION_FAILED, "detail": detail}]}
            return
    try:
        task_id, rollout_id = trajectory_identity(row)
    except Exception:  # noqa: BLE001 - without an identity 0.7.0 attaches nothing
        return
    result[_TRAJECTORY] = {
        "schema_version": "1.0",
        "task_id": task_id,
        "rollout_id": rollout_id,
        "invocations": [],
        "turns": [],
        "model_calls": [],
        "tool_calls": [],
        "gaps": [{"code": TRAJECTORY_PROJECTION_FAILED, "invocation_id": None, "detail": detail}],
    }
