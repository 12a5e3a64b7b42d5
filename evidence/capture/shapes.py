"""Tool calls and reasoning text read from a response body by its *shape* (spec: §4.3).

0.7.0 looks at what the body contains (``output`` list, ``choices`` list, ``content`` list),
not at the exchange's ``dialect``. Malformed containers that Python cannot iterate (a truthy
int ``summary``/``tool_calls``) raise ``TypeError`` here, which makes the record unreadable,
exactly as in 0.7.0.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["tool_calls_and_reasoning"]

_THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})


def _arguments(value: Any) -> Any:
    """Arguments as 0.7.0 stores them: objects kept, JSON strings decoded, the rest wrapped.

    A string nested too deep for the decoder (about a thousand levels) is wrapped too: 0.7.0
    catches every exception there, ``RecursionError`` included, and keeps the record.
    """
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return {"_raw": value}
    return {}


def _from_responses(output: list[Any], tools: list[dict[str, Any]], texts: list[str]) -> None:
    for item in output:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "function_call":
            tools.append(
                {
                    "call_id": item.get("call_id") or item.get("id"),
                    "name": item.get("name"),
                    "arguments": _arguments(item.get("arguments")),
                }
            )
        elif kind == "reasoning":
            texts.extend(
                part["text"]
                for part in item.get("summary") or []
                if isinstance(part, dict) and isinstance(part.get("text"), str) and part["text"]
            )


def _from_chat(choices: list[Any], tools: list[dict[str, Any]], texts: list[str]) -> None:
    for choice in choices:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            continue
        for tool_call in message.get("tool_calls") or []:
            if not isinstance(tool_call, dict):
                continue
            function = tool_call.get("function") or {}
            if not isinstance(function, dict):
                function = {}
            tools.append(
                {
                    "call_id": tool_call.get("id"),
                    "name": function.get("name"),
                    "arguments": _arguments(function.get("arguments")),
                }
            )
        text = message.get("reasoning_content") or message.get("reasoning")
        if isinstance(text, str) and text:
            texts.append(text)


def _from_messages(content: list[Any], tools: list[dict[str, Any]], texts: list[str]) -> None:
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_use":
            tools.append({"call_id": block.get("id"), "name": block.get("name"), "arguments": block.get("input") or {}})
        elif kind in _THINKING_TYPES and isinstance(block.get("thinking"), str):
            texts.append(block["thinking"])


def tool_calls_and_reasoning(response: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """``(tool_calls, reasoning_content)`` of one response body; reasoning joined with newlines."""
    tools: list[dict[str, Any]] = []
    texts: list[str] = []
    if isinstance(output := response.get("output"), list):
        _from_responses(output, tools, texts)
    elif isinstance(choices := response.get("choices"), list):
        _from_chat(choices, tools, texts)
    elif isinstance(content := response.get("content"), list):
        _from_messages(content, tools, texts)
    return tools, ("\n".join(texts) if texts else None)
