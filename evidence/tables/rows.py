"""One attempt's rows of the analysis tables, from its enriched row and its identity.

The extraction is in two steps, so a row is decoded once for everything made from it:
``row_facts`` reads an enriched row (as decoded from its line; None when the line could not be
decoded) where it is decoded (the attempt engine, or a rebuild from a run's outputs): its
``turns``, ``model_calls``, ``tool_calls`` and ``gaps`` rows without their key columns, and
its ``rollouts`` values, which ``rollout_row`` places around the attempt's identity (up to its
ATIF and verdict columns); every row is a tuple in ``schema.TABLES`` column order. The ATIF and verdict columns and the
``findings`` rows are run-level (0.7.0's ATIF acceptance, the health fold): ``atif_columns``,
``verdict_columns`` and ``finding_rows`` make them, and ``verdict_order`` /
``verdict_line_order`` say which line of ``health/rollout_verdicts.jsonl`` is whose (the file
is sorted by identity).

Rows are read tolerantly: a rejected or failed attempt's row is written unchanged, so any field
may hold anything. A value of the wrong type is null, never an error, and every list entry
gives a row (a turn that is not an object is a row of nulls), so row counts equal the lists.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evidence.gaps import GAPS
from evidence.health.calls import call_successful
from evidence.references import CallIndex, json_name, json_ref_name, ng_perf_owners
from evidence.tables.values import (
    OBJECT,
    as_bool,
    as_float,
    as_int,
    as_length,
    as_list,
    as_number,
    as_object,
    as_present,
    as_str,
    as_text,
)

__all__ = [
    "ROW_COLUMNS",
    "AttemptIdentity",
    "RowFacts",
    "rollout_row",
    "row_facts",
]

GAP_ORIGINS = ("ng_model_call_capture", "ng_agent_observations", "ng_trajectory")


@dataclass(frozen=True, slots=True)
class AttemptIdentity:
    """What the run knows about an attempt besides its row: its keys, place and manifest entry."""

    job_id: str
    run_id: str
    key: str  # manifest attempts[].key
    shard: int  # position of its rollouts file (0 in a one-file job)
    shard_file: str | None
    source: str  # main | failures
    line: int  # 1-based line in its input file
    output_line: int  # 1-based line in the run's rollouts.jsonl / rollouts_failures.jsonl
    rollout_id: str | None
    status: str
    reason: str | None = None
    notes: tuple[str, ...] = ()
    repaired: bool = False
    size: int = 0  # bytes of the enriched line

    @property
    def keys(self) -> tuple[str, str, str, str]:
        """The four columns every table starts with."""
        return (self.job_id, self.run_id, self.key, self.source)


ROW_COLUMNS = (
    "task_index",
    "rollout_index",
    "attempt_index",
    "stage_index",
    "task_id",
    "agent",
    "environment_server",
    "failure_class",
    "reward",
    "resolved",
    "metrics",
    "perf_num_turns",
    "perf_num_tool_calls",
    "perf_token_observability_coverage",
    "perf_prompt_tokens",
    "perf_cached_prompt_tokens",
    "perf_completion_tokens",
    "perf_reasoning_tokens",
    "perf_total_latency_ms",
    "has_trajectory",
    "invocation_count",
    "turn_count",
    "model_call_count",
    "tool_call_count",
    "gap_count",
    "capture_call_count",
    "capture_gaps",
)
"""The ``rollouts`` columns an attempt's row gives (``RowFacts.values``), in table order; the
identity's columns sit between them (``rollout_row``)."""
_INDICES, _NAMES, _MEASURES = slice(0, 4), slice(4, 7), slice(7, None)
"""``RowFacts.values`` as ``rollout_row`` places them: before the rollout id, before the status, after ``repaired``."""
_METRICS = ROW_COLUMNS.index("metrics")


@dataclass(frozen=True, slots=True)
class RowFacts:
    """What the tables read from one attempt's row, before the attempt's identity is known.

    ``values`` are the ``rollouts`` columns of ``ROW_COLUMNS``; the child rows lack the four
    key columns. Made once per attempt where its row is decoded (the attempt engine, or a
    rebuild from a run's outputs) and joined with the identity by ``rollout_row``, so the row
    is never decoded again for its tables or its viewer page.
    """

    values: tuple[Any, ...]
    turns: list[tuple[Any, ...]]
    model_calls: list[tuple[Any, ...]]
    tool_calls: list[tuple[Any, ...]]
    gaps: list[tuple[Any, ...]]

    def named(self) -> dict[str, Any]:
        """``values`` by column name."""
        return dict(zip(ROW_COLUMNS, self.values, strict=True))

    def to_json(self) -> list[Any]:
        """JSON-ready lists; :meth:`from_json` restores equal facts."""
        return [list(self.values), self.turns, self.model_calls, self.tool_calls, self.gaps]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> RowFacts:
        values, turns, calls, tools, gaps = data
        restored = list(values)
        restored[_METRICS] = [(name, number) for name, number in restored[_METRICS]]  # Arrow's map takes pairs
        return cls(
            tuple(restored), [tuple(r) for r in turns], [tuple(r) for r in calls], [tuple(r) for r in tools], [tuple(r) for r in gaps]
        )


def row_facts(row: Mapping[str, Any] | None) -> RowFacts:
    """What the tables read from an attempt's row (as decoded from its line; None when it could not be)."""
    row = row if isinstance(row, Mapping) else {}
    trajectory = as_object(row.get("ng_trajectory"))
    capture = as_object(row.get("ng_model_call_capture"))
    turns = as_list(trajectory.get("turns")) if trajectory is not None else []
    calls = as_list(trajectory.get("model_calls")) if trajectory is not None else []
    tools = as_list(trajectory.get("tool_calls")) if trajectory is not None else []
    turn_rows = [_turn_row(index, turn) for index, turn in enumerate(turns)]
    call_rows = _model_calls(trajectory, calls, turns) if trajectory is not None else []
    tool_rows = [_tool_row(index, tool) for index, tool in enumerate(tools)]
    gap_rows = list(_gaps(row))
    perf = as_object(row.get("ng_perf")) or {}
    agent = as_object(row.get("agent_ref")) or {}
    counted = trajectory is not None
    values = (
        as_int(row.get("_ng_task_index")),
        as_int(row.get("_ng_rollout_index")),
        as_int(row.get("_ng_attempt_index")),
        as_int(row.get("stage_index")),
        as_str(trajectory.get("task_id")) if trajectory is not None else None,
        as_str(agent.get("name")),
        as_str(row.get("_ng_environment_server")),
        as_str(row.get("_ng_failure_class")),
        as_number(row.get("reward")),
        as_bool(row.get("resolved")),
        _metrics(row),
        as_int(perf.get("num_turns")),
        as_int(perf.get("num_tool_calls")),
        as_float(perf.get("token_observability_coverage")),
        as_int(perf.get("prompt_tokens")),
        as_int(perf.get("cached_prompt_tokens")),
        as_int(perf.get("completion_tokens")),
        as_int(perf.get("reasoning_tokens")),
        as_float(perf.get("total_latency_ms")),
        counted,
        len(as_list(trajectory.get("invocations"))) if trajectory is not None else None,
        len(turn_rows) if counted else None,
        len(call_rows) if counted else None,
        len(tool_rows) if counted else None,
        len(gap_rows),
        as_length(capture.get("calls")) if capture is not None else None,
        [_gap_code(gap) for gap in as_list(capture.get("gaps"))] if capture is not None else None,
    )
    return RowFacts(values, turn_rows, call_rows, tool_rows, gap_rows)


def rollout_row(facts: RowFacts, identity: AttemptIdentity) -> tuple[Any, ...]:
    """An attempt's ``rollouts`` row but its ATIF and verdict columns: its row's facts around its identity."""
    values = facts.values
    return (
        *identity.keys,
        identity.shard,
        identity.shard_file,
        identity.line,
        identity.output_line,
        *values[_INDICES],
        identity.rollout_id,
        *values[_NAMES],
        identity.status,
        identity.reason,
        list(identity.notes),
        identity.repaired,
        *values[_MEASURES],
        identity.size,
    )


# A turn's or tool call's row: its position, then each field read as its column's type. Spelled
# out field by field, as a model call's row is: a loop over (key, reader) pairs cost twice as much.


def _turn_row(index: int, value: Any) -> tuple[Any, ...]:
    get = (as_object(value) or {}).get
    return (
        index,
        as_str(get("invocation_id")),
        as_int(get("turn_no")),
        as_float(get("timestamp")),
        as_int(get("step_count")),
        as_bool(get("resolved")),
        as_present(get("answer")),
        as_present(get("reasoning_content")),
        as_length(get("question")),
        as_length(get("model_calls")),
    )


def _tool_row(index: int, value: Any) -> tuple[Any, ...]:
    get = (as_object(value) or {}).get
    return (
        index,
        as_str(get("tool_call_id")),
        as_str(get("invocation_id")),
        as_str(get("tool_name")),
        as_str(get("sandbox_id")),
        as_float(get("started_at")),
        as_float(get("completed_at")),
        as_float(get("duration_ms")),
        as_str(get("timing_source")),
        as_str(get("status")),
        as_str(get("error_type")),
        as_present(get("output")),
    )


def _model_calls(trajectory: Mapping[str, Any], calls: list[Any], turns: list[Any]) -> list[tuple[Any, ...]]:
    """Each call's row: who owns it (ng_perf's rule) and the first turn naming it alone."""
    entries = [as_object(call) or {} for call in calls]
    metas = [as_object(call.get("response_metadata")) or {} for call in entries]
    names = [
        json_name(call.get("model_call_id"), meta.get("model_ref"), meta.get("response_id"))
        for call, meta in zip(entries, metas, strict=True)
    ]
    index = CallIndex(names)
    invocations = [inv for inv in as_list(trajectory.get("invocations")) if isinstance(inv, OBJECT)]
    owners = ng_perf_owners(
        index,
        (
            (as_str(inv.get("invocation_id")), [json_ref_name(ref) for ref in as_list(inv.get("model_calls")) if isinstance(ref, OBJECT)])
            for inv in invocations
        ),
    )
    turn_of: dict[int, tuple[int | None, int | None]] = {}
    for turn_index, turn in enumerate(turns):
        if not isinstance(turn, OBJECT):
            continue
        for ref in as_list(turn.get("model_calls")):
            if isinstance(ref, OBJECT):
                found = index.candidates(json_ref_name(ref))
                if len(found) == 1:
                    turn_of.setdefault(found[0], (turn_index, as_int(turn.get("turn_no"))))
    rows = []
    for position, (call, meta) in enumerate(zip(entries, metas, strict=True)):
        get, about = call.get, meta.get
        tokens = (as_object(get("token_stats")) or {}).get
        model_ref = as_object(about("model_ref")) or {}
        status_code, error_category, response_status = about("status_code"), about("error_category"), about("response_status")
        on_turn, turn_no = turn_of.get(position, (None, None))
        owner = owners.get(position)
        rows.append(
            (
                position,
                as_str(get("model_call_id")),
                as_str(about("response_id")),
                owner,
                position in owners,
                on_turn,
                turn_no,
                as_float(get("started_at")),
                as_float(get("completed_at")),
                as_float(get("duration_ms")),
                as_str(model_ref.get("name")),
                as_str(about("model")),
                as_str(about("dialect")),
                as_int(status_code),
                as_str(response_status),
                as_str(about("finish_reason")),
                as_str(error_category),
                as_str(about("response_source")),
                as_int(about("upstream_status_code")),
                as_float(about("latency_ttft_ms")),
                call_successful(status_code, error_category, response_status),
                as_int(tokens("prompt_tokens")),
                as_int(tokens("completion_tokens")),
                as_int(tokens("reasoning_tokens")),
                as_int(tokens("total_tokens")),
                as_int(tokens("cached_tokens")),
            )
        )
    return rows


def _gaps(row: Mapping[str, Any]) -> Iterator[tuple[Any, ...]]:
    for origin in GAP_ORIGINS:
        holder = as_object(row.get(origin))
        if holder is None:
            continue
        for index, gap in enumerate(as_list(holder.get("gaps"))):
            if isinstance(gap, OBJECT):
                code = as_str(gap.get("code"))
                yield (origin, index, code, code in GAPS, as_str(gap.get("invocation_id")), as_text(gap.get("detail")))
            else:
                yield (origin, index, None, False, None, as_text(gap))


def _gap_code(gap: Any) -> str | None:
    return as_str(gap.get("code")) if isinstance(gap, Mapping) else None


def _metrics(row: Mapping[str, Any]) -> list[tuple[str, float]]:
    """Every top-level number or boolean, in row order (a number no double can hold is left out)."""
    pairs = []
    for key, value in row.items():
        number = as_number(value)
        if number is not None:
            pairs.append((key, number))
    return pairs
