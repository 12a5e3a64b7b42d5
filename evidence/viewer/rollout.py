"""One main attempt as the viewer shows it: its index entry (the table's row) and its detail (its page).

Built on the tables' extraction (``evidence.tables.row_facts``): the same turns, model calls,
tool calls and gaps, read as tolerantly, so the viewer and ``tables/*.parquet`` never disagree
about a rollout. ``view_facts`` reads the row once, where it is decoded; ``rollout_view`` adds
the run's judgement (verdict, findings, ATIF decision) in the reduce. What the tables leave
out the viewer adds as excerpts (``text.py``): a tool call's arguments (from the captured call that asked for it) and output, a turn's
answer and reasoning, a failed call's error body. Each finding points at its subject
(``findings.py``), each gap carries its meaning from the gap-code registry (``evidence.gaps``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import orjson

from evidence.capture import CAPTURE_SUFFIX
from evidence.gaps import GAPS
from evidence.jsonl import dumps, loads_exact
from evidence.tables import ROW_COLUMNS, TABLES, AttemptIdentity, RowFacts
from evidence.tables.schema import KEYS
from evidence.tables.values import OBJECT
from evidence.viewer.findings import Subjects, finding_views
from evidence.viewer.text import SHORT_CHARS, Excerpts, excerpt, script_json, short

__all__ = ["RolloutView", "ViewFacts", "decode_row", "rollout_view", "view_facts"]


@dataclass(frozen=True, slots=True)
class RolloutView:
    """A main attempt for the viewer: ``entry`` (the index's fields, by name) and ``detail`` (its page's data, as ``script_json``)."""

    entry: dict[str, Any]
    detail: bytes


@dataclass(frozen=True, slots=True)
class ViewFacts:
    """What the viewer shows of one main row before the run has judged it: the parts of its page
    and of its index entry read from the row, and what its findings can point at.

    Made where the row is decoded (the attempt engine), carried in the attempt's part, and
    completed by ``rollout_view`` with the run-level verdict and ATIF decision. The page's parts
    (``head``, ``tail``: its members before and after the judgement, as ``script_json`` without
    the braces) are rendered once, here: the reduce splices them into the page as bytes, so a
    row's turns and calls are never decoded and encoded again.
    """

    head: bytes
    tail: bytes
    entry: dict[str, Any]
    subjects: Subjects

    def encode(self) -> bytes:
        """How the attempt's part carries them: the two page parts and the rest as JSON, one per line
        (JSON text written compact holds no newline byte, and neither does ``script_json``'s)."""
        return b"\n".join((self.head, self.tail, dumps([self.entry, self.subjects.to_json()])))

    @classmethod
    def decode(cls, data: bytes) -> ViewFacts:
        """Inverse of :meth:`encode` (a lone surrogate in a raw id reads back through the exact loader)."""
        head, tail, rest = data.split(b"\n", 2)
        try:
            entry, subjects = orjson.loads(rest)
        except orjson.JSONDecodeError:
            entry, subjects = loads_exact(rest)
        return cls(head, tail, entry, Subjects.from_json(subjects))


def view_facts(line: bytes, row: Mapping[str, Any] | None, facts: RowFacts) -> ViewFacts:
    """The viewer's facts of one main row.

    Args:
        line: the enriched line of ``rollouts.jsonl`` (shown in part when it is no JSON object).
        row: that line as the page shows it (``decode_row``'s second), or None.
        facts: ``evidence.tables.row_facts`` of that same ``row``.
    """
    rollout = facts.named()
    calls, tools = facts.model_calls, facts.tool_calls
    call_ids = [_CALL_IDS(call) for call in calls]
    tool_ids = [_TOOL_IDS(tool) for tool in tools]
    gaps = [_gap(values) for values in facts.gaps]
    raw = _Raw(row)
    requested = raw.requested_tools()
    asked = [requested.get(tool_call_id) for _, tool_call_id in tool_ids]
    raw_turns, raw_calls, raw_tools = raw.entries("turns"), raw.entries("model_calls"), raw.entries("tool_calls")
    questions = Excerpts(SHORT_CHARS)
    head = {
        "readable": row is not None,
        "unreadable_line": None if row is not None else excerpt(line.decode("utf-8", "replace")),
        "identity": {name: short(rollout[name]) for name in _IDENTITY},
        "perf": {name: rollout[name] for name in _PERF},
    }
    tail = {
        "capture": {"calls": rollout["capture_call_count"], "gaps": [short(code) for code in rollout["capture_gaps"] or []]},
        "invocations": rollout["invocation_count"],
        "has_trajectory": rollout["has_trajectory"],
        "turns": [_turn(turn, raw_turns, questions) for turn in facts.turns],
        "model_calls": [_call(call, raw_calls) for call in calls],
        "tool_calls": [
            _tool(tool, raw_tools, request, _requesting_call(request, call_ids), calls) for tool, request in zip(tools, asked, strict=True)
        ],
        "gaps": gaps,
    }
    entry = {
        "task": rollout["task_index"],
        "rollout": rollout["rollout_index"],
        "agent": short(rollout["agent"]),
        "gaps": _unique(gap["code"] for gap in gaps),
        "reward": rollout["reward"],
        "latency_ms": rollout["perf_total_latency_ms"],
        "prompt_tokens": rollout["perf_prompt_tokens"],
        "completion_tokens": rollout["perf_completion_tokens"],
        "turns": rollout["turn_count"],
        "model_calls": rollout["model_call_count"],
        "tool_calls": rollout["tool_call_count"],
    }
    subjects = Subjects([list(_TURN_IDS(turn)) for turn in facts.turns], [list(ids) for ids in call_ids], [list(ids) for ids in tool_ids])
    return ViewFacts(_members(head), _members(tail), entry, subjects)


def rollout_view(
    facts: ViewFacts,
    identity: AttemptIdentity,
    verdict: Mapping[str, Any] | None,
    atif: tuple[str | None, str | None, str | None],
) -> RolloutView:
    """The viewer's view of one main attempt: its facts with the run's judgement of it.

    Args:
        facts: ``view_facts`` of its row.
        identity: the attempt's identity (``job_id``/``run_id`` are not shown: the viewer
            holds no run id, so reruns write the same bytes).
        verdict: its line of ``health/rollout_verdicts.jsonl``, or None when health has none.
        atif: its ATIF columns (``evidence.tables.atif_columns``): status, file, refusal.
    """
    findings = finding_views(_list(verdict.get("findings")) if verdict is not None else [], facts.subjects)
    status, atif_file, refusal = atif
    detail = {
        "line": identity.output_line,
        "key": short(identity.key),
        "input_line": identity.line,
        "shard_file": short(identity.shard_file),
        "rollout_id": short(identity.rollout_id),
        "capture_file": short(f"{identity.rollout_id}{CAPTURE_SUFFIX}") if identity.rollout_id else None,
        "status": short(identity.status),
        "reason": excerpt(identity.reason),
        "notes": [excerpt(note, SHORT_CHARS) for note in identity.notes],
        "repaired": identity.repaired,
    }
    judged = {
        "verdict": short(verdict.get("verdict")) if verdict is not None else None,
        "unobserved": [short(check) for check in _list(verdict.get("unobserved"))] if verdict is not None else [],
        "findings": findings,
        "atif": {"status": status, "file": short(atif_file), "refusal": excerpt(refusal)},
    }
    entry = facts.entry
    view_entry = {
        "line": identity.output_line,
        "rollout_id": short(identity.rollout_id),
        "task": entry["task"],
        "rollout": entry["rollout"],
        "agent": entry["agent"],
        "status": short(identity.status),
        "verdict": judged["verdict"],
        "checks": _unique(finding["check"] for finding in findings),
        "gaps": entry["gaps"],
        "atif": status,
        "reward": entry["reward"],
        "latency_ms": entry["latency_ms"],
        "prompt_tokens": entry["prompt_tokens"],
        "completion_tokens": entry["completion_tokens"],
        "turns": entry["turns"],
        "model_calls": entry["model_calls"],
        "tool_calls": entry["tool_calls"],
        "findings": len(findings),
    }
    page = b"{%s,%s,%s,%s}" % (_members(detail), facts.head, _members(judged), facts.tail)
    return RolloutView(view_entry, page)


def _members(mapping: Mapping[str, Any]) -> bytes:
    """A non-empty mapping's members as ``script_json``, without its braces: a part of a page spliced in as bytes."""
    return script_json(mapping)[1:-1]


def decode_row(line: bytes) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The row as health judged it and as the page shows it.

    Health reads with orjson: a line orjson refuses is an unreadable record, whose verdict line
    has the unreadable identity. The page shows what Python's ``json`` reads of such a line (a
    lone surrogate, an integer wider than 64 bits), so the evidence is there all the same.
    """
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        try:
            value = loads_exact(line)
        except (ValueError, RecursionError):
            return None, None
        return None, value if isinstance(value, dict) else None
    row = value if isinstance(value, dict) else None
    return row, row


_CHILD_COLUMNS = {name: table.names[len(KEYS) :] for name, table in TABLES.items()}
"""Each table's column names after its keys, in the order of ``RowFacts``' child rows."""


def _columns(table: str, *names: str) -> Callable[[Sequence[Any]], Any]:
    """A reader of the named columns of ``table``'s child rows: their values in the order named (one name: its value).

    A child row is read by position, found here once: a dict of it by column name cost more
    than everything read from it (a model call's 26 columns, for a few of them).
    """
    columns = _CHILD_COLUMNS[table]
    return itemgetter(*(columns.index(name) for name in names))


_IDENTITY = ROW_COLUMNS[: ROW_COLUMNS.index("metrics")]
"""The row's identity as the page shows it: its indices, task id, agent, server, failure class, reward, resolved."""
_PERF = tuple(name for name in ROW_COLUMNS if name.startswith("perf_"))
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
        return _list(self.trajectory.get(name))

    def requested_tools(self) -> dict[str, tuple[Mapping[str, Any], Mapping[str, Any]]]:
        """Tool call id -> (the captured call that asked for it, the request), first asker wins."""
        found: dict[str, tuple[Mapping[str, Any], Mapping[str, Any]]] = {}
        for call in _list(self.capture.get("calls")):
            if not isinstance(call, OBJECT):
                continue
            for request in _list(call.get("tool_calls")):
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


def _unique(values: Any) -> list[Any]:
    """Each value once, first occurrence first (None left out)."""
    seen: dict[Any, None] = {}
    for value in values:
        if value is not None:
            seen.setdefault(value, None)
    return list(seen)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
