"""Align turns with agent groups and join each to exactly one captured model call (§5.7-§5.10).

Each turn is a redundant copy of what the conversation already says; 0.7.0 exports only when
the copies agree, so a corrupted capture can never be published as a clean trajectory.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from evidence.atif.completion import check_completion, check_tokens, dump_model_call, iso_timestamp, step_metrics
from evidence.atif.conversation import AgentGroup
from evidence.atif.items import InvalidItem, parse_items
from evidence.atif.strict_json import json_equal
from evidence.errors import AtifExportError

__all__ = ["CallIndex", "agent_steps", "surplus_calls"]

# turn copy -> the message when it differs from what the conversation says
_COPY_MISMATCH = (
    ("question", "does not match the model-visible conversation prefix"),
    ("answer", "does not match the exported agent answer"),
    ("reasoning_content", "does not match the exported reasoning"),
)


def _blank(value: Any) -> bool:
    return isinstance(value, str) and not value.strip()


class CallIndex:
    """The captured calls, findable by ``model_call_id`` or by ``(model_ref, response_id)``."""

    def __init__(self, calls: list[dict[str, Any]]) -> None:
        self.calls = calls
        self.by_id: dict[str, list[int]] = defaultdict(list)
        self.by_pair: dict[tuple[str, str, str], list[int]] = defaultdict(list)
        for index, call in enumerate(calls):
            call_id = call.get("model_call_id")
            if isinstance(call_id, str) and call_id.strip():
                self.by_id[call_id].append(index)
            meta = call.get("response_metadata", {})
            ref, response_id = meta.get("model_ref"), meta.get("response_id")
            if ref is not None and isinstance(response_id, str) and response_id.strip():
                self.by_pair[(ref["type"], ref["name"], response_id)].append(index)

    def resolve(self, ref: dict[str, Any], path: str) -> int:
        """The capture index a reference names, after 0.7.0's blank, ambiguity and conflict checks."""
        call_id, response_id = ref.get("model_call_id"), ref.get("response_id")
        if _blank(call_id):
            raise AtifExportError(f"{path}.model_call_id: cannot be blank")
        if _blank(response_id):
            raise AtifExportError(f"{path}.response_id: cannot be blank")
        if call_id is not None:
            matches = self.by_id.get(call_id, [])
            if not matches:
                raise AtifExportError(f"{path}: unknown model_call_id {call_id!r}")
            if len(matches) > 1:
                raise AtifExportError(f"{path}: model_call_id matches more than one captured model call")
        else:
            model_ref = ref["model_ref"]
            matches = self.by_pair.get((model_ref["type"], model_ref["name"], response_id), [])
            if not matches:
                raise AtifExportError(f"{path}: model_ref and response_id do not match a captured model call")
            if len(matches) > 1:
                raise AtifExportError(f"{path}: model_ref and response_id match more than one captured model call")
        index = matches[0]
        self._check_resolved(index, ref, path)
        return index

    def _check_resolved(self, index: int, ref: dict[str, Any], path: str) -> None:
        call = self.calls[index]
        meta = call.get("response_metadata", {})
        if _blank(call.get("model_call_id")):
            raise AtifExportError(f"ng_trajectory.model_calls[{index}].model_call_id: cannot be blank")
        if _blank(meta.get("response_id")):
            raise AtifExportError(f"ng_trajectory.model_calls[{index}].response_metadata.response_id: cannot be blank")
        if ref.get("response_id") is not None and ref["response_id"] != meta.get("response_id"):
            raise AtifExportError(f"{path}: response_id conflicts with the captured model call")
        ref_model, call_model = ref.get("model_ref"), meta.get("model_ref")
        if ref_model is not None and (
            call_model is None or (ref_model["type"], ref_model["name"]) != (call_model["type"], call_model["name"])
        ):
            raise AtifExportError(f"{path}: model_ref conflicts with the captured model call")


def _copy(turn: dict[str, Any], name: str, path: str) -> list[dict[str, Any]] | None:
    value = turn.get(name)
    if value is None:
        return None
    try:
        return [item.data for item in parse_items(value)]
    except InvalidItem:
        raise AtifExportError(f"{path}.{name}: missing or invalid Responses conversation items") from None


def _check_copies(turn: dict[str, Any], group: AgentGroup, path: str) -> None:
    copies = {name: _copy(turn, name, path) for name, _ in _COPY_MISMATCH}
    expected = {"question": group.question, "answer": group.answer, "reasoning_content": group.reasoning}
    for name, message in _COPY_MISMATCH:
        if not json_equal(copies[name], expected[name]):
            raise AtifExportError(f"{path}.{name}: {message}")


def _agent_step(group: AgentGroup, turn: dict[str, Any], call: dict[str, Any], path: str) -> dict[str, Any]:
    check_completion(call, group.is_tool_step, path)
    check_tokens(call, path)
    step: dict[str, Any] = {"source": "agent", "message": group.fields["message"]}
    step["timestamp"] = iso_timestamp(turn["timestamp"], path)
    model = call.get("response_metadata", {}).get("model")
    if model is not None:
        step["model_name"] = model
    for name in ("reasoning_content", "tool_calls", "observation"):
        if name in group.fields:
            step[name] = group.fields[name]
    metrics = step_metrics(call)
    if metrics is not None:
        step["metrics"] = metrics
    step["llm_call_count"] = 1
    turn_info = {"turn_no": turn["turn_no"], "step_count": turn["step_count"]}
    if turn.get("resolved") is not None:
        turn_info["resolved"] = turn["resolved"]
    extra: dict[str, Any] = {"turn": turn_info, "model_call": dump_model_call(call)}
    if group.source_items:
        extra["source_items"] = group.source_items
    step["extra"] = {"nemo_gym": extra}
    return step


def agent_steps(
    groups: list[AgentGroup], turns: list[dict[str, Any]], index: CallIndex, root_id: str
) -> tuple[list[dict[str, Any]], list[int]]:
    """One agent step per group, joined through its turn; also the selected capture indices."""
    if len(turns) != len(groups):
        raise AtifExportError(
            f"ng_trajectory.turns: expected one turn for each of {len(groups)} agent steps, got {len(turns)}"
        )
    steps, selected, calls_so_far = [], [], 0
    for position, (turn, group) in enumerate(zip(turns, groups)):
        path = f"ng_trajectory.turns[{position}]"
        if turn["invocation_id"] != root_id:
            raise AtifExportError(f"{path}.invocation_id: does not match the root invocation")
        if turn["turn_no"] != position + 1:
            raise AtifExportError(f"{path}.turn_no: turns must be ordered sequentially from 1")
        _check_copies(turn, group, path)
        calls_so_far += group.call_count
        if turn["step_count"] != calls_so_far:
            raise AtifExportError(f"{path}.step_count: does not match the cumulative tool-call count")
        refs = turn.get("model_calls", [])
        if len(refs) != 1:
            raise AtifExportError(f"{path}.model_calls: expected exactly one captured model call")
        chosen = index.resolve(refs[0], f"{path}.model_calls[0]")
        if chosen in selected:
            raise AtifExportError(f"{path}.model_calls[0]: model call is referenced by more than one turn")
        selected.append(chosen)
        steps.append(_agent_step(group, turn, index.calls[chosen], path))
    return steps, selected


def surplus_calls(invocation: dict[str, Any], index: CallIndex, selected: list[int]) -> list[dict[str, Any]]:
    """Check the invocation's references; return the dumps of calls no turn selected."""
    path = "ng_trajectory.invocations[0].model_calls"
    referenced = [index.resolve(ref, f"{path}[{j}]") for j, ref in enumerate(invocation.get("model_calls", []))]
    if len(set(referenced)) != len(referenced):
        raise AtifExportError(f"{path}: must not reference a captured model call more than once")
    missing = sorted(set(selected) - set(referenced))
    if missing:
        raise AtifExportError(f"{path}: must reference every turn-selected model call; missing indices: {missing!r}")
    chosen = set(selected)
    return [dump_model_call(call) for i, call in enumerate(index.calls) if i not in chosen]
