"""Attach the projection to a row, or record why it failed (collection.md §8.10, §8.11).

Only top-level keys of ``result`` are assigned: nested containers that change (the capture's
calls, a gaps list) are rebuilt, never edited, so ``result`` may share its nested values with the
caller's input row.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from evidence.gaps import TRAJECTORY_PROJECTION_FAILED
from evidence.identity import trajectory_identity
from evidence.models.capture import PAYLOAD_KEYS
from evidence.models.observations import AgentObservationBundle
from evidence.models.trajectory import TrajectoryRecord
from evidence.projection.build import build_joined_trajectory

__all__ = ["attach_joined_trajectory", "attach_trajectory", "trajectory_json"]

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
    return attach_joined_trajectory(row, result, None)


def attach_joined_trajectory(
    row: Mapping[str, Any], result: dict[str, Any], joined: AgentObservationBundle | None
) -> TrajectoryRecord | None:
    """:func:`attach_trajectory`, given the joined bundle behind ``result["ng_agent_observations"]``
    when the caller has it (see :func:`~evidence.projection.build.build_joined_trajectory`)."""
    try:
        record = build_joined_trajectory(row, result, joined)
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
        models: list[BaseModel] = getattr(record, name)
        dump[name] = [
            {field: getattr(model, field) if field in untyped else typed[field] for field in _field_names(type(model))}
            for model, typed in zip(models, dump[name], strict=True)
        ]
    return dump


@functools.cache
def _field_names(model: type[BaseModel]) -> tuple[str, ...]:
    """``model.model_fields``' names, read once: pydantic serves that mapping through a
    deprecation-checking descriptor whose cost, paid per model spliced, showed in profiles."""
    return tuple(model.model_fields)


def _strip_payloads(result: dict[str, Any]) -> None:
    """Remove request/response bodies from the capture's calls; the trajectory now holds them."""
    capture = result.get(_CAPTURE)
    if not isinstance(capture, dict) or not isinstance(capture.get("calls"), list):
        return
    calls = [_without_payloads(call) if isinstance(call, dict) else call for call in capture["calls"]]
    result[_CAPTURE] = {**capture, "calls": calls}


def _without_payloads(call: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``call`` less its payload keys, the others in their order.

    Copied whole, then popped: one C-level copy and four pops take a tenth of the time of
    rebuilding a call's thirty-odd keys one by one.
    """
    stripped = dict(call)
    for key in PAYLOAD_KEYS:
        stripped.pop(key, None)
    return stripped


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
