"""Walk the root conversation into ATIF source steps and agent groups (0.7.0 §5.3-§5.6).

A group is what one model call produced: optional reasoning, then either parallel function
calls (with the outputs that follow them) or one assistant message. Errors inside a group are
reported at the group's first item, because that is where 0.7.0 points.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evidence.atif.items import UNSUPPORTED_ITEM_CLASS, Item
from evidence.atif.strict_json import json_equal, loads_strict
from evidence.errors import AtifExportError

__all__ = ["AgentGroup", "Walk", "text_content", "walk_conversation"]

_ROOT = "ng_trajectory.invocations[0].conversation"
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
_SOURCE_KINDS = frozenset({"easy_message", "input_message"})
_RECORD_EXTRA_FIELDS = ("sandbox_id", "started_at", "completed_at", "duration_ms", "timing_source")
_FLOAT_FIELDS = frozenset({"started_at", "completed_at", "duration_ms"})


@dataclass
class AgentGroup:
    """One agent step in the making: the ATIF fields so far and what its turn must copy.

    The copies are the conversation items at ``question`` (every item before the group),
    ``answer`` (its function calls, or its message) and ``reasoning`` (None: the group has none),
    as positions in the conversation.
    """

    question: range
    answer: range
    reasoning: range | None
    is_tool_step: bool
    call_count: int
    fields: dict[str, Any]
    source_items: dict[str, Any] = field(default_factory=dict)


@dataclass
class Walk:
    """The conversation split into the leading source steps and the agent groups."""

    source_steps: list[dict[str, Any]]
    groups: list[AgentGroup]


def text_content(content: Any, path: str) -> str | list[dict[str, str]]:
    """Map scalar or multipart text content to ATIF: a string stays, parts become text parts."""
    if isinstance(content, str):
        return content
    if not content:
        raise AtifExportError(f"{path}: expected non-empty scalar or multipart text content")
    parts = []
    for index, part in enumerate(content):
        if part.get("type") not in _TEXT_PARTS:
            raise AtifExportError(f"{path}[{index}]: only text content parts are supported")
        if part.get("annotations") or part.get("logprobs"):
            raise AtifExportError(f"{path}[{index}]: annotations and log probabilities are not representable")
        parts.append({"type": "text", "text": part["text"]})
    return parts


def _source_step(index: int, item: Item, has_agent_output: bool) -> dict[str, Any]:
    path = f"{_ROOT}[{index}]"
    role = item.data["role"]
    if role == "developer":
        raise AtifExportError(f"{path}.role: developer messages are not supported")
    if role == "assistant":
        raise AtifExportError(f"{path}.role: copied assistant context is not supported")
    if has_agent_output:
        raise AtifExportError(f"{path}: later system or user turns are not supported")
    status = item.data.get("status", "completed")
    if status != "completed":
        raise AtifExportError(f"{path}.status: expected completed, got {status!r}")
    return {"source": role, "message": text_content(item.data["content"], f"{path}.content")}


def _reasoning_text(reasoning: list[Item], path: str) -> str:
    """Exactly one plain-text segment across the group's reasoning items, or a refusal."""
    segments: list[dict[str, Any]] = []
    for index, item in enumerate(reasoning):
        data = item.data
        if data.get("encrypted_content") is not None:
            raise AtifExportError(f"{path}.reasoning[{index}]: encrypted reasoning is not supported")
        content, summary = data.get("content") or [], data.get("summary") or []
        if content and summary:
            raise AtifExportError(
                f"{path}.reasoning[{index}]: reasoning with both content and summary cannot be represented without dropping one"
            )
        if not content and not summary:
            raise AtifExportError(f"{path}.reasoning[{index}]: encrypted or empty reasoning cannot be represented as ATIF text")
        segments.extend(content or summary)
    if len(segments) != 1:
        raise AtifExportError(f"{path}.reasoning: multiple reasoning segments cannot be represented without changing boundaries")
    text: str = segments[0]["text"]  # the parse admits only string text
    return text


def _message_fields(item: Item, path: str) -> dict[str, Any]:
    status = item.data.get("status", "completed")
    if status != "completed":
        raise AtifExportError(f"{path}.status: expected completed, got {status!r}")
    if not item.data["content"]:
        raise AtifExportError(f"{path}.content: expected at least one output_text part")
    return {"message": text_content(item.data["content"], f"{path}.content")}


class _Walker:
    """Single pass over the items; holds the state 0.7.0 threads through the walk."""

    def __init__(self, items: list[Item], records: dict[str, dict[str, Any]], root_id: str) -> None:
        self.items = items
        self.records = records
        self.root_id = root_id
        self.used_records: set[str] = set()
        self.seen_call_ids: set[str] = set()

    def _calls(self, start: int, path: str) -> tuple[list[Item], int]:
        calls, index = [], start
        while index < len(self.items) and self.items[index].kind == "function_call":
            data, call_path = self.items[index].data, f"{_ROOT}[{index}]"
            if not data["call_id"].strip():
                raise AtifExportError(f"{call_path}.call_id: cannot be empty")
            if not data["name"].strip():
                raise AtifExportError(f"{call_path}.name: cannot be empty")
            if data.get("status", "completed") != "completed":
                raise AtifExportError(f"{call_path}.status: expected completed, got {data['status']!r}")
            if data["call_id"] in self.seen_call_ids:
                raise AtifExportError(f"{path}: duplicate function call ID {data['call_id']!r}")
            self.seen_call_ids.add(data["call_id"])
            calls.append(self.items[index])
            index += 1
        return calls, index

    def _outputs(self, start: int, path: str, call_ids: set[str]) -> tuple[list[Item], int]:
        outputs, seen, index = [], set(), start
        while index < len(self.items) and self.items[index].kind == "function_call_output":
            data = self.items[index].data
            if data["call_id"] in seen:
                raise AtifExportError(f"{path}: duplicate function result ID {data['call_id']!r}")
            seen.add(data["call_id"])
            if data.get("status", "completed") != "completed":
                raise AtifExportError(f"{path}: function result {data['call_id']!r} is {data['status']!r}")
            outputs.append(self.items[index])
            index += 1
        if seen != call_ids:
            raise AtifExportError(
                f"{path}: function results must match this turn's calls exactly; expected {sorted(call_ids)!r}, got {sorted(seen)!r}"
            )
        return outputs, index

    def _executed_call(self, position: int, call: dict[str, Any], output: dict[str, Any], path: str) -> tuple[dict[str, Any], Any]:
        """Check one call against its execution record; return the ATIF tool call and content."""
        call_id = call["call_id"]
        record = self.records.get(call_id)
        if record is None:
            raise AtifExportError(f"{path}: missing tool execution record for {call_id!r}")
        if record["invocation_id"] != self.root_id:
            raise AtifExportError(f"{path}: tool execution {call_id!r} belongs to another invocation")
        status = record.get("status", "unknown")
        if status != "completed":
            raise AtifExportError(f"{path}: tool execution {call_id!r} is {status!r}, not completed")
        if record.get("error_type") is not None:
            raise AtifExportError(f"{path}: completed tool execution {call_id!r} contains an error")
        if record.get("tool_name") is not None and record["tool_name"] != call["name"]:
            raise AtifExportError(f"{path}: tool execution {call_id!r} has a different tool name")
        content = text_content(output["output"], f"{path}.tool_results[{call_id!r}].output")
        if record.get("output") is not None and not json_equal(record["output"], output["output"]):
            raise AtifExportError(f"{path}: tool execution {call_id!r} has a different recorded output")
        try:
            arguments = loads_strict(call["arguments"])
        except (ValueError, RecursionError):
            raise AtifExportError(f"{path}.tool_calls[{position}].arguments: expected a JSON object string") from None
        if not isinstance(arguments, dict):
            raise AtifExportError(f"{path}.tool_calls[{position}].arguments: expected a JSON object")
        self.used_records.add(call_id)
        tool_call: dict[str, Any] = {"tool_call_id": call_id, "function_name": call["name"], "arguments": arguments}
        if "id" in call:
            tool_call["extra"] = {"nemo_gym": {"source_item_id": call["id"]}}
        return tool_call, content

    def _result(self, output: dict[str, Any], content: Any) -> dict[str, Any]:
        record = self.records[output["call_id"]]
        extra = {
            name: float(record[name]) if name in _FLOAT_FIELDS else record[name]
            for name in _RECORD_EXTRA_FIELDS
            if record.get(name) is not None
        }
        if "id" in output:
            extra["source_item_id"] = output["id"]
        result: dict[str, Any] = {"source_call_id": output["call_id"], "content": content}
        if extra:
            result["extra"] = {"nemo_gym": extra}
        return result

    def _tool_fields(self, start: int, path: str) -> tuple[list[Item], int, dict[str, Any]]:
        """The calls from ``start`` with their outputs: (calls, index after the outputs, ATIF fields)."""
        calls, index = self._calls(start, path)
        call_ids = {call.data["call_id"] for call in calls}
        outputs, index = self._outputs(index, path, call_ids)
        by_id = {output.data["call_id"]: output.data for output in outputs}
        tool_calls, contents = [], {}
        for position, call in enumerate(calls):
            call_id = call.data["call_id"]
            tool_call, contents[call_id] = self._executed_call(position, call.data, by_id[call_id], path)
            tool_calls.append(tool_call)
        results = [self._result(output.data, contents[output.data["call_id"]]) for output in outputs]
        return calls, index, {"message": "", "tool_calls": tool_calls, "observation": {"results": results}}

    def _group(self, start: int) -> tuple[AgentGroup, int]:
        path = f"{_ROOT}[{start}]"
        index = start
        while index < len(self.items) and self.items[index].kind == "reasoning":
            index += 1
        reasoning = self.items[start:index]
        if index == len(self.items):
            raise AtifExportError(f"{path}: reasoning is not followed by an agent answer")
        head = self.items[index]
        source_items: dict[str, Any] = {}
        if reasoning:
            source_items["reasoning_ids"] = [item.data["id"] for item in reasoning]
        if head.kind == "function_call":
            answer, end, fields = self._tool_fields(index, path)
        elif head.kind == "output_message":
            answer, end, fields = [head], index + 1, _message_fields(head, path)
            source_items["message_id"] = head.data["id"]
        else:
            raise AtifExportError(f"{path}: unsupported conversation item {UNSUPPORTED_ITEM_CLASS[head.kind]}")
        if reasoning:
            fields["reasoning_content"] = _reasoning_text(reasoning, path)
        group = AgentGroup(
            question=range(start),
            answer=range(index, index + len(answer)),
            reasoning=range(start, index) if reasoning else None,
            is_tool_step=head.kind == "function_call",
            call_count=len(fields.get("tool_calls", ())),
            fields=fields,
            source_items=source_items,
        )
        return group, end

    def walk(self) -> Walk:
        steps: list[dict[str, Any]] = []
        groups: list[AgentGroup] = []
        index = 0
        while index < len(self.items):
            item = self.items[index]
            if item.kind in _SOURCE_KINDS:
                steps.append(_source_step(index, item, bool(groups)))
                index += 1
                continue
            group, index = self._group(index)
            groups.append(group)
        unused = sorted(self.records.keys() - self.used_records)
        if unused:
            raise AtifExportError(f"ng_trajectory.tool_calls: unreferenced tool executions: {unused!r}")
        if not groups:
            raise AtifExportError(f"{_ROOT}: contains no agent output")
        return Walk(steps, groups)


def walk_conversation(items: list[Item], tool_calls: list[dict[str, Any]], root_id: str) -> Walk:
    """Split the root conversation into steps, checking every call against its execution record."""
    records = {record["tool_call_id"]: record for record in tool_calls}
    if len(records) != len(tool_calls):
        raise AtifExportError("ng_trajectory.tool_calls: tool_call_id values must be unique")
    return _Walker(items, records, root_id).walk()
