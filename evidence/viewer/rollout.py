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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from evidence.capture import CAPTURE_SUFFIX
from evidence.gaps import GAPS
from evidence.jsonl import loads_exact
from evidence.tables import ROW_COLUMNS, TABLES, AttemptIdentity, RowFacts
from evidence.tables.schema import KEYS
from evidence.viewer.findings import Subjects, finding_views
from evidence.viewer.text import SHORT_CHARS, excerpt, short

__all__ = ["RolloutView", "ViewFacts", "decode_row", "rollout_view", "view_facts"]


@dataclass(frozen=True, slots=True)
class RolloutView:
    """A main attempt for the viewer: ``entry`` (the index's fields, by name) and ``detail`` (its page's data)."""

    entry: dict[str, Any]
    detail: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ViewFacts:
    """What the viewer shows of one main row before the run has judged it: the parts of its page
    and of its index entry read from the row, and what its findings can point at.

    Made where the row is decoded (the attempt engine), carried in the attempt's part, and
    completed by ``rollout_view`` with the run-level verdict and ATIF decision.
    """

    page: dict[str, Any]
    entry: dict[str, Any]
    subjects: Subjects

    def to_json(self) -> list[Any]:
        return [self.page, self.entry, self.subjects.to_json()]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> ViewFacts:
        page, entry, subjects = data
        return cls(page, entry, Subjects.from_json(subjects))


def view_facts(line: bytes, row: Mapping[str, Any] | None, facts: RowFacts) -> ViewFacts:
    """The viewer's facts of one main row.

    Args:
        line: the enriched line of ``rollouts.jsonl`` (shown in part when it is no JSON object).
        row: that line as the page shows it (``decode_row``'s second), or None.
        facts: ``evidence.tables.row_facts`` of that same ``row``.
    """
    rollout = facts.named()
    turns = [dict(zip(_CHILD_COLUMNS["turns"], values, strict=True)) for values in facts.turns]
    calls = [dict(zip(_CHILD_COLUMNS["model_calls"], values, strict=True)) for values in facts.model_calls]
    tools = [dict(zip(_CHILD_COLUMNS["tool_calls"], values, strict=True)) for values in facts.tool_calls]
    gaps = [_gap(dict(zip(_CHILD_COLUMNS["gaps"], values, strict=True))) for values in facts.gaps]
    raw = _Raw(row)
    requested = raw.requested_tools()
    call_of_tool = [_requesting_call(requested.get(tool["tool_call_id"]), calls) for tool in tools]
    page = {
        "readable": row is not None,
        "unreadable_line": None if row is not None else excerpt(line.decode("utf-8", "replace")),
        "identity": {name: short(rollout[name]) for name in _IDENTITY},
        "perf": {name: rollout[name] for name in _PERF},
        "capture": {"calls": rollout["capture_call_count"], "gaps": [short(code) for code in rollout["capture_gaps"] or []]},
        "invocations": rollout["invocation_count"],
        "has_trajectory": rollout["has_trajectory"],
        "turns": [_turn(turn, raw.item("turns", turn["turn_index"])) for turn in turns],
        "model_calls": [_call(call, raw.item("model_calls", call["call_index"])) for call in calls],
        "tool_calls": [
            _tool(tool, raw.item("tool_calls", tool["tool_index"]), requested.get(tool["tool_call_id"]), call, calls)
            for tool, call in zip(tools, call_of_tool, strict=True)
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
    subjects = Subjects(
        [[turn["turn_index"], turn["turn_no"]] for turn in turns],
        [[call["call_index"], call["model_call_id"], call["response_id"]] for call in calls],
        [[tool["tool_index"], tool["tool_call_id"]] for tool in tools],
    )
    return ViewFacts(page, entry, subjects)


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
    page = facts.page
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
        **{name: page[name] for name in _PAGE_HEAD},
        "verdict": short(verdict.get("verdict")) if verdict is not None else None,
        "unobserved": [short(check) for check in _list(verdict.get("unobserved"))] if verdict is not None else [],
        "findings": findings,
        "atif": {"status": status, "file": short(atif_file), "refusal": excerpt(refusal)},
        **{name: page[name] for name in _PAGE_TAIL},
    }
    entry = facts.entry
    view_entry = {
        "line": identity.output_line,
        "rollout_id": short(identity.rollout_id),
        "task": entry["task"],
        "rollout": entry["rollout"],
        "agent": entry["agent"],
        "status": short(identity.status),
        "verdict": detail["verdict"],
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
    return RolloutView(view_entry, detail)


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
_PAGE_HEAD = ("readable", "unreadable_line", "identity", "perf")
_PAGE_TAIL = ("capture", "invocations", "has_trajectory", "turns", "model_calls", "tool_calls", "gaps")
"""The page's parts from the row, before and after the run's judgement of it."""
_IDENTITY = ROW_COLUMNS[: ROW_COLUMNS.index("metrics")]
"""The row's identity as the page shows it: its indices, task id, agent, server, failure class, reward, resolved."""
_PERF = tuple(name for name in ROW_COLUMNS if name.startswith("perf_"))


class _Raw:
    """The row's own lists, read tolerantly, for what the tables leave out (texts, arguments, errors)."""

    def __init__(self, row: Mapping[str, Any] | None) -> None:
        row = row if isinstance(row, Mapping) else {}
        trajectory = row.get("ng_trajectory")
        self.trajectory: Mapping[str, Any] = trajectory if isinstance(trajectory, Mapping) else {}
        capture = row.get("ng_model_call_capture")
        self.capture: Mapping[str, Any] = capture if isinstance(capture, Mapping) else {}

    def item(self, name: str, index: int) -> Mapping[str, Any]:
        entries = _list(self.trajectory.get(name))
        entry = entries[index] if index < len(entries) else None
        return entry if isinstance(entry, Mapping) else {}

    def requested_tools(self) -> dict[str, tuple[Mapping[str, Any], Mapping[str, Any]]]:
        """Tool call id -> (the captured call that asked for it, the request), first asker wins."""
        found: dict[str, tuple[Mapping[str, Any], Mapping[str, Any]]] = {}
        for call in _list(self.capture.get("calls")):
            if not isinstance(call, Mapping):
                continue
            for request in _list(call.get("tool_calls")):
                if isinstance(request, Mapping) and isinstance(request.get("call_id"), str):
                    found.setdefault(request["call_id"], (call, request))
        return found


def _requesting_call(asked: tuple[Mapping[str, Any], Mapping[str, Any]] | None, calls: Sequence[Mapping[str, Any]]) -> int | None:
    """The trajectory position of the model call that asked for a tool call (by its captured call's ids)."""
    if asked is None:
        return None
    captured = asked[0]
    for field in ("model_call_id", "response_id"):
        value = captured.get(field)
        if isinstance(value, str) and value:
            for call in calls:
                if call[field] == value:
                    index: int = call["call_index"]
                    return index
    return None


def _turn(turn: Mapping[str, Any], raw: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "index": turn["turn_index"],
        "turn_no": turn["turn_no"],
        "invocation": short(turn["invocation_id"]),
        "timestamp": turn["timestamp"],
        "steps": turn["step_count"],
        "resolved": turn["resolved"],
        "question_items": turn["question_items"],
        "refs": turn["model_call_refs"],
        "question": excerpt(raw.get("question"), SHORT_CHARS),
        "answer": excerpt(raw.get("answer")),
        "reasoning": excerpt(raw.get("reasoning_content"), SHORT_CHARS),
    }


def _call(call: Mapping[str, Any], raw: Mapping[str, Any]) -> dict[str, Any]:
    meta = raw.get("response_metadata")
    response = raw.get("response")
    error = response.get("error") if isinstance(response, Mapping) else None
    return {
        "index": call["call_index"],
        "id": short(call["model_call_id"]),
        "response_id": short(call["response_id"]),
        "turn": call["turn_index"],
        "owner": short(call["invocation_id"]),
        "owned": call["owned"],
        "model": short(call["model"]),
        "server": short(call["model_server"]),
        "dialect": short(call["dialect"]),
        "status_code": call["status_code"],
        "response_status": short(call["response_status"]),
        "finish_reason": short(call["finish_reason"]),
        "error_category": short(call["error_category"]),
        "upstream_status_code": call["upstream_status_code"],
        "local_reason": excerpt(meta.get("local_response_reason"), SHORT_CHARS) if isinstance(meta, Mapping) else None,
        "error": excerpt(error),
        "successful": call["successful"],
        "started_at": call["started_at"],
        "duration_ms": call["duration_ms"],
        "ttft_ms": call["latency_ttft_ms"],
        "prompt_tokens": call["prompt_tokens"],
        "completion_tokens": call["completion_tokens"],
        "reasoning_tokens": call["reasoning_tokens"],
        "cached_tokens": call["cached_tokens"],
    }


def _tool(
    tool: Mapping[str, Any],
    raw: Mapping[str, Any],
    asked: tuple[Mapping[str, Any], Mapping[str, Any]] | None,
    call: int | None,
    calls: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    return {
        "index": tool["tool_index"],
        "id": short(tool["tool_call_id"]),
        "name": short(tool["tool_name"]) or (short(asked[1].get("name")) if asked is not None else None),
        "invocation": short(tool["invocation_id"]),
        "status": short(tool["status"]),
        "error_type": short(tool["error_type"]),
        "started_at": tool["started_at"],
        "duration_ms": tool["duration_ms"],
        "timing_source": short(tool["timing_source"]),
        "sandbox": short(tool["sandbox_id"]),
        "arguments": excerpt(asked[1].get("arguments")) if asked is not None else None,
        "output": excerpt(raw.get("output")),
        "call": call,
        "turn": calls[call]["turn_index"] if call is not None else None,
    }


def _gap(gap: Mapping[str, Any]) -> dict[str, Any]:
    code = gap["code"]
    return {
        "origin": gap["origin"],
        "code": short(code),
        "meaning": GAPS.get(code) if isinstance(code, str) else None,
        "invocation": short(gap["invocation_id"]),
        "detail": excerpt(gap["detail"]),
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
