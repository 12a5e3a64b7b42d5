"""Align turns with agent groups and join each to exactly one captured model call (§5.7-§5.10).

Each turn is a redundant copy of what the conversation already says; 0.7.0 exports only when
the copies agree, so a corrupted capture can never be published as a clean trajectory. The
join is the export rule of ``evidence.references.ExportCallIndex``.
"""

from __future__ import annotations

from typing import Any

from evidence.atif.completion import check_completion, check_tokens, dump_model_call, iso_timestamp, step_metrics
from evidence.atif.conversation import AgentGroup
from evidence.atif.items import InvalidItem, Item, parse_items
from evidence.atif.preflight import CopyMatches
from evidence.atif.strict_json import json_equal
from evidence.errors import AtifExportError
from evidence.references import ExportCallIndex

__all__ = ["agent_steps", "surplus_calls"]

# turn copy -> the message when it differs from what the conversation says
_COPY_MISMATCH = (
    ("question", "does not match the model-visible conversation prefix"),
    ("answer", "does not match the exported agent answer"),
    ("reasoning_content", "does not match the exported reasoning"),
)


def _copy(turn: dict[str, Any], name: str, path: str) -> list[dict[str, Any]] | None:
    value = turn.get(name)
    if value is None:
        return None
    try:
        return [item.data for item in parse_items(value)]
    except InvalidItem:
        raise AtifExportError(f"{path}.{name}: missing or invalid Responses conversation items") from None


def _check_copies(
    turn: dict[str, Any], position: int, group: AgentGroup, conversation: list[Item], matches: CopyMatches, path: str
) -> None:
    """Each copy parsed and compared before the next is parsed: the first failure wins, so a
    question that differs is reported before an answer that does not parse.

    A copy made of exactly the conversation items it must equal (``matches``) is equal: it is
    neither parsed nor compared.
    """
    spans = {"question": group.question, "answer": group.answer, "reasoning_content": group.reasoning}
    for name, message in _COPY_MISMATCH:
        span = spans[name]
        if span is not None and matches.same_items(position, name, span):
            continue
        expected = None if span is None else [conversation[item].data for item in span]
        if not json_equal(_copy(turn, name, path), expected):
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
    groups: list[AgentGroup],
    turns: list[dict[str, Any]],
    index: ExportCallIndex,
    root_id: str,
    conversation: list[Item],
    matches: CopyMatches,
) -> tuple[list[dict[str, Any]], list[int]]:
    """One agent step per group, joined through its turn; also the selected capture indices.

    ``conversation``: the root conversation the groups were walked from; ``matches``: the
    preflight's matches of the turns' copies to it.
    """
    if len(turns) != len(groups):
        raise AtifExportError(f"ng_trajectory.turns: expected one turn for each of {len(groups)} agent steps, got {len(turns)}")
    steps, selected, calls_so_far = [], [], 0
    for position, (turn, group) in enumerate(zip(turns, groups, strict=True)):
        path = f"ng_trajectory.turns[{position}]"
        if turn["invocation_id"] != root_id:
            raise AtifExportError(f"{path}.invocation_id: does not match the root invocation")
        if turn["turn_no"] != position + 1:
            raise AtifExportError(f"{path}.turn_no: turns must be ordered sequentially from 1")
        _check_copies(turn, position, group, conversation, matches, path)
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


def surplus_calls(invocation: dict[str, Any], index: ExportCallIndex, selected: list[int]) -> list[dict[str, Any]]:
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
