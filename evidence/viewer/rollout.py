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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from evidence.capture import CAPTURE_SUFFIX
from evidence.jsonl import dumps, loads_exact
from evidence.tables import ROW_COLUMNS, AttemptIdentity, RowFacts
from evidence.tables.values import as_list
from evidence.viewer.entries import page_entries
from evidence.viewer.findings import Subjects, finding_views
from evidence.viewer.text import SHORT_CHARS, excerpt, script_json, short

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
    entries = page_entries(row, facts)
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
        "turns": entries.turns,
        "model_calls": entries.model_calls,
        "tool_calls": entries.tool_calls,
        "gaps": entries.gaps,
    }
    entry = {
        "task": rollout["task_index"],
        "rollout": rollout["rollout_index"],
        "agent": short(rollout["agent"]),
        "gaps": _unique(gap["code"] for gap in entries.gaps),
        "reward": rollout["reward"],
        "latency_ms": rollout["perf_total_latency_ms"],
        "prompt_tokens": rollout["perf_prompt_tokens"],
        "completion_tokens": rollout["perf_completion_tokens"],
        "turns": rollout["turn_count"],
        "model_calls": rollout["model_call_count"],
        "tool_calls": rollout["tool_call_count"],
    }
    return ViewFacts(_members(head), _members(tail), entry, entries.subjects)


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
    findings = finding_views(as_list(verdict.get("findings")) if verdict is not None else [], facts.subjects)
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
        "unobserved": [short(check) for check in as_list(verdict.get("unobserved"))] if verdict is not None else [],
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


_IDENTITY = ROW_COLUMNS[: ROW_COLUMNS.index("metrics")]
"""The row's identity as the page shows it: its indices, task id, agent, server, failure class, reward, resolved."""
_PERF = tuple(name for name in ROW_COLUMNS if name.startswith("perf_"))


def _unique(values: Any) -> list[Any]:
    """Each value once, first occurrence first (None left out)."""
    seen: dict[Any, None] = {}
    for value in values:
        if value is not None:
            seen.setdefault(value, None)
    return list(seen)
