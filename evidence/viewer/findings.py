"""Where each health finding of a rollout points: the turn, model call or tool call it names.

A finding's locator is what the check wrote (``evidence/health``): ``{"turn": turn_no}`` for a
turn-scoped check, ``{"call_id": id}`` for a model-call check, where the id is the call's
``model_call_id``, else its ``response_id``, else its position (``CallView.locator``), and
nothing for a rollout-scope check. A ``tool_call_id`` locator (no 0.7.0 check writes one yet)
names a tool call. A locator that names nothing in the trajectory (a reference that matched no
captured call) points at nothing, and the page says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evidence.health.registry import CHECKS
from evidence.viewer.text import SHORT_CHARS, excerpt, short

__all__ = ["MODEL_CALL", "TOOL_CALL", "TURN", "Subjects", "finding_views"]

TURN, MODEL_CALL, TOOL_CALL = "turn", "model_call", "tool_call"


@dataclass(frozen=True, slots=True)
class Subjects:
    """What a rollout's findings can point at, by position in ``ng_trajectory`` (as the tables read it).

    Attributes:
        turns: each turn's ``(turn_index, turn_no)``.
        calls: each model call's ``(call_index, model_call_id, response_id)``.
        tools: each tool call's ``(tool_index, tool_call_id)``.
    """

    turns: Sequence[Sequence[Any]]
    calls: Sequence[Sequence[Any]]
    tools: Sequence[Sequence[Any]]

    def to_json(self) -> list[Any]:
        return [self.turns, self.calls, self.tools]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> Subjects:
        turns, calls, tools = data
        return cls(turns, calls, tools)


def finding_views(findings: Sequence[Any], subjects: Subjects) -> list[dict[str, Any]]:
    """Each finding (a verdict line's ``findings`` entry) with its subject and its targets.

    A target is ``[kind, index]``: the position of the turn, model call or tool call in
    ``ng_trajectory``; a locator may match several (two invocations' turn 1).
    """
    views = []
    for entry in findings:
        finding = entry if isinstance(entry, Mapping) else {}
        check = finding.get("check")
        spec = CHECKS.get(check) if isinstance(check, str) else None
        locator = finding.get("locator")
        detail = finding.get("detail")
        reason = detail.get("reason") if isinstance(detail, Mapping) else None
        views.append(
            {
                "check": short(check if isinstance(check, str) else repr(check)),
                "subject": spec.subject if spec is not None else None,
                "locator": excerpt(locator, SHORT_CHARS),
                "detail": excerpt(reason if isinstance(reason, str) else detail),
                "targets": _targets(locator, subjects),
            }
        )
    return views


def _targets(locator: Any, subjects: Subjects) -> list[list[Any]] | None:
    """The items a locator names; None for a rollout-level finding (no locator)."""
    if not isinstance(locator, Mapping):
        return None
    found: list[list[Any]] = []
    turn_no = locator.get("turn")
    if isinstance(turn_no, int) and not isinstance(turn_no, bool):
        found += [[TURN, index] for index, number in subjects.turns if number == turn_no]
    call_id = locator.get("call_id")
    if isinstance(call_id, str):
        found += [[MODEL_CALL, index] for index in _calls_named(call_id, subjects.calls)]
    tool_id = locator.get("tool_call_id")
    if isinstance(tool_id, str):
        found += [[TOOL_CALL, index] for index, named in subjects.tools if named == tool_id]
    return found


def _calls_named(call_id: str, calls: Sequence[Sequence[Any]]) -> list[int]:
    """The calls a ``call_id`` locator names, by the locator's own precedence: call id, response id, position."""
    for field in (1, 2):  # model_call_id, response_id
        named = [call[0] for call in calls if call[field] == call_id]
        if named:
            return named
    return [call[0] for call in calls if str(call[0]) == call_id]
