"""A row's turns, model calls, tool calls and gaps as the viewer's page shows them.

Each entry starts from the tables' child row of it (``evidence.tables.row_facts``, read by
position) and adds what the tables leave out, as excerpts from the row itself: a turn's
question, answer and reasoning, a failed call's error body, a tool call's arguments (from the
captured call that asked for it) and output, a gap's meaning from the gap-code registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from evidence.gaps import GAPS
from evidence.tables import TABLES, RowFacts
from evidence.tables.schema import KEYS
from evidence.tables.values import OBJECT, as_list
from evidence.viewer.findings import Subjects
from evidence.viewer.text import SHORT_CHARS, Excerpts, excerpt, short

__all__ = ["PageEntries", "page_entries"]


@dataclass(frozen=True, slots=True)
class PageEntries:
    """The page's lists of one row, and what its findings can point at."""

    turns: list[dict[str, Any]]
    model_calls: list[dict[str, Any]]
    tool_calls: list[dict[str, Any]]
    gaps: list[dict[str, Any]]
    subjects: Subjects


def page_entries(row: Mapping[str, Any] | None, facts: RowFacts) -> PageEntries:
    """The entries of the row ``facts`` were read from (``row``: as the page shows it, or None)."""
    calls, tools = facts.model_calls, facts.tool_calls
    call_ids = [_CALL_IDS(call) for call in calls]
    tool_ids = [_TOOL_IDS(tool) for tool in tools]
    raw = _Raw(row)
    requested = raw.requested_tools()
    asked = [requested.get(tool_call_id) for _, tool_call_id in tool_ids]
    raw_turns, raw_calls, raw_tools = raw.entries("turns"), raw.entries("model_calls"), raw.entries("tool_calls")
    questions = Excerpts(SHORT_CHARS)
    return PageEntries(
        turns=[_turn(turn, raw_turns, questions) for turn in facts.turns],
        model_calls=[_call(call, raw_calls) for call in calls],
        tool_calls=[
            _tool(tool, raw_tools, request, _requesting_call(request, call_ids), calls) for tool, request in zip(tools, asked, strict=True)
        ],
        gaps=[_gap(values) for values in facts.gaps],
        subjects=Subjects(
            [list(_TURN_IDS(turn)) for turn in facts.turns], [list(ids) for ids in call_ids], [list(ids) for ids in tool_ids]
        ),
    )


_CHILD_COLUMNS = {name: table.names[len(KEYS) :] for name, table in TABLES.items()}
"""Each table's column names after its keys, in the order of ``RowFacts``' child rows."""


def _columns(table: str, *names: str) -> Callable[[Sequence[Any]], Any]:
    """A reader of the named columns of ``table``'s child rows: their values in the order named (one name: its value).

    A child row is read by position, found here once: a dict of it by column name cost more
    than everything read from it (a model call's 26 columns, for a few of them).
    """
    columns = _CHILD_COLUMNS[table]
    return itemgetter(*(columns.index(name) for name in names))


_TURN_IDS = _columns("turns", "turn_index", "turn_no")
_CALL_IDS = _columns("model_calls", "call_index", "model_call_id", "response_id")
_TOOL_IDS = _columns("tool_calls", "tool_index", "tool_call_id")
"""What a finding can point at a turn, model call or tool call by (``Subjects``)."""
_TURN = _columns(
    "turns", "turn_index", "turn_no", "invocation_id", "timestamp", "step_count", "resolved", "question_items", "model_call_refs"
)
_CALL = _columns(
    "model_calls",
    "call_index",
    "model_call_id",
    "response_id",
    "turn_index",
    "invocation_id",
    "owned",
    "model",
    "model_server",
    "dialect",
    "status_code",
    "response_status",
    "finish_reason",
    "error_category",
    "upstream_status_code",
    "successful",
    "started_at",
    "duration_ms",
    "latency_ttft_ms",
    "prompt_tokens",
    "completion_tokens",
    "reasoning_tokens",
    "cached_tokens",
)
_CALL_TURN = _columns("model_calls", "turn_index")
_TOOL = _columns(
    "tool_calls",
    "tool_index",
    "tool_call_id",
    "tool_name",
    "invocation_id",
    "status",
    "error_type",
    "started_at",
    "duration_ms",
    "timing_source",
    "sandbox_id",
)
_GAP = _columns("gaps", "origin", "code", "invocation_id", "detail")
"""The columns ``_turn``, ``_call``, ``_tool`` and ``_gap`` show, in the order they unpack them."""


class _Raw:
    """The row's own lists, read tolerantly, for what the tables leave out (texts, arguments, errors)."""

    def __init__(self, row: Mapping[str, Any] | None) -> None:
        row = row if isinstance(row, OBJECT) else {}
        trajectory = row.get("ng_trajectory")
        self.trajectory: Mapping[str, Any] = trajectory if isinstance(trajectory, OBJECT) else {}
        capture = row.get("ng_model_call_capture")
        self.capture: Mapping[str, Any] = capture if isinstance(capture, OBJECT) else {}

    def entries(self, name: str) -> list[Any]:
        """One of the trajectory's lists (``turns``, ``model_calls``, ``tool_calls``), read once per row."""
        return as_list(self.trajectory.get(name))

    def requested_tools(self) -> dict[str, tuple[Mapping[str, Any], Mapping[str, Any]]]:
        """Tool call id -> (the captured call that asked for it, the request), first asker wins."""
        found: dict[str, tuple[Mapping[str, Any], Mapping[str, Any]]] = {}
        for call in as_list(self.capture.get("calls")):
            if not isinstance(call, OBJECT):
                continue
            for request in as_list(call.get("tool_calls")):
                if isinstance(request, OBJECT) and isinstance(request.get("call_id"), str):
                    found.setdefault(request["call_id"], (call, request))
        return found


def _item(entries: list[Any], index: int) -> Mapping[str, Any]:
    """The entry at ``index`` of one of ``_Raw.entries`` when it is an object, else an empty one."""
    entry = entries[index] if index < len(entries) else None
    return entry if isinstance(entry, OBJECT) else {}


def _requesting_call(asked: tuple[Mapping[str, Any], Mapping[str, Any]] | None, call_ids: Sequence[Sequence[Any]]) -> int | None:
    """The trajectory position of the model call that asked for a tool call (by its captured call's ids).

    ``call_ids``: each model call's ``_CALL_IDS`` (position, model_call_id, response_id).
    """
    if asked is None:
        return None
    captured = asked[0]
    for field, column in (("model_call_id", 1), ("response_id", 2)):
        value = captured.get(field)
        if isinstance(value, str) and value:
            for ids in call_ids:
                if ids[column] == value:
                    index: int = ids[0]
                    return index
    return None


def _turn(turn: Sequence[Any], entries: list[Any], questions: Excerpts) -> dict[str, Any]:
    """``questions``: the excerpts of the row's turn questions so far (each question repeats the last)."""
    index, turn_no, invocation, timestamp, steps, resolved, question_items, refs = _TURN(turn)
    raw = _item(entries, index)
    return {
        "index": index,
        "turn_no": turn_no,
        "invocation": short(invocation),
        "timestamp": timestamp,
        "steps": steps,
        "resolved": resolved,
        "question_items": question_items,
        "refs": refs,
        "question": questions(raw.get("question")),
        "answer": excerpt(raw.get("answer")),
        "reasoning": excerpt(raw.get("reasoning_content"), SHORT_CHARS),
    }


def _call(call: Sequence[Any], entries: list[Any]) -> dict[str, Any]:
    (
        index,
        call_id,
        response_id,
        turn,
        owner,
        owned,
        model,
        server,
        dialect,
        status_code,
        response_status,
        finish_reason,
        error_category,
        upstream_status_code,
        successful,
        started_at,
        duration_ms,
        ttft_ms,
        prompt_tokens,
        completion_tokens,
        reasoning_tokens,
        cached_tokens,
    ) = _CALL(call)
    raw = _item(entries, index)
    meta = raw.get("response_metadata")
    response = raw.get("response")
    error = response.get("error") if isinstance(response, OBJECT) else None
    return {
        "index": index,
        "id": short(call_id),
        "response_id": short(response_id),
        "turn": turn,
        "owner": short(owner),
        "owned": owned,
        "model": short(model),
        "server": short(server),
        "dialect": short(dialect),
        "status_code": status_code,
        "response_status": short(response_status),
        "finish_reason": short(finish_reason),
        "error_category": short(error_category),
        "upstream_status_code": upstream_status_code,
        "local_reason": excerpt(meta.get("local_response_reason"), SHORT_CHARS) if isinstance(meta, OBJECT) else None,
        "error": excerpt(error),
        "successful": successful,
        "started_at": started_at,
        "duration_ms": duration_ms,
        "ttft_ms": ttft_ms,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "reasoning_tokens": reasoning_tokens,
        "cached_tokens": cached_tokens,
    }


def _tool(
    tool: Sequence[Any],
    entries: list[Any],
    asked: tuple[Mapping[str, Any], Mapping[str, Any]] | None,
    call: int | None,
    calls: Sequence[Sequence[Any]],
) -> dict[str, Any]:
    index, tool_call_id, name, invocation, status, error_type, started_at, duration_ms, timing_source, sandbox = _TOOL(tool)
    raw = _item(entries, index)
    return {
        "index": index,
        "id": short(tool_call_id),
        "name": short(name) or (short(asked[1].get("name")) if asked is not None else None),
        "invocation": short(invocation),
        "status": short(status),
        "error_type": short(error_type),
        "started_at": started_at,
        "duration_ms": duration_ms,
        "timing_source": short(timing_source),
        "sandbox": short(sandbox),
        "arguments": excerpt(asked[1].get("arguments")) if asked is not None else None,
        "output": excerpt(raw.get("output")),
        "call": call,
        "turn": _CALL_TURN(calls[call]) if call is not None else None,
    }


def _gap(gap: Sequence[Any]) -> dict[str, Any]:
    origin, code, invocation, detail = _GAP(gap)
    return {
        "origin": origin,
        "code": short(code),
        "meaning": GAPS.get(code) if isinstance(code, str) else None,
        "invocation": short(invocation),
        "detail": excerpt(detail),
    }
