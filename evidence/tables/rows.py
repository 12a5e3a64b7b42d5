"""One attempt's rows of the analysis tables, from its enriched row and its identity.

``attempt_rows`` is the one extraction: an enriched row (as decoded from its line; None when
the line could not be decoded) plus the attempt's identity gives the attempt's ``rollouts`` row
(up to its ATIF and verdict columns) and its ``turns``, ``model_calls``, ``tool_calls`` and
``gaps`` rows, each a tuple in ``schema.TABLES`` column order. It needs nothing but the row
and its identity, so the reduce and the attempt engine can call it row by row. The ATIF and
verdict columns and the ``findings`` rows come from files of their own
(``atif/manifest.jsonl`` + ``atif/rejections.jsonl``, ``health/rollout_verdicts.jsonl``):
``atif_columns``, ``verdict_columns`` and ``finding_rows`` make them, and ``verdict_order`` /
``verdict_line_order`` say which verdict line is whose (the verdict file is sorted by identity).

Rows are read tolerantly: a rejected or failed attempt's row is written unchanged, so any field
may hold anything. A value of the wrong type is null, never an error, and every list entry
gives a row (a turn that is not an object is a row of nulls), so row counts equal the lists.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evidence.gaps import GAPS
from evidence.health.calls import call_successful
from evidence.health.identity import InvalidIdentity, record_identity, unreadable_identity
from evidence.health.registry import CHECKS
from evidence.jsonl import dumps
from evidence.references import CallIndex, json_name, json_ref_name, ng_perf_owners

__all__ = [
    "EXPORTED",
    "NO_ATIF",
    "NO_VERDICT",
    "REFUSED",
    "WITHHELD",
    "AttemptIdentity",
    "AttemptRows",
    "atif_columns",
    "attempt_rows",
    "finding_rows",
    "verdict_columns",
    "verdict_line_order",
    "verdict_order",
]

EXPORTED, REFUSED, WITHHELD = "exported", "refused", "withheld"
NO_ATIF: tuple[None, None, None] = (None, None, None)
"""The ATIF columns of a sidecar row (the export reads main rows only)."""
NO_VERDICT: tuple[None, None, None] = (None, None, None)
"""The verdict columns of a row health did not judge (a sidecar row, a main row without a digest)."""

GAP_ORIGINS = ("ng_model_call_capture", "ng_agent_observations", "ng_trajectory")
_INT64 = 2**63


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


@dataclass(frozen=True, slots=True)
class AttemptRows:
    """An attempt's rows: ``rollout`` lacks the ATIF and verdict columns, which the caller appends."""

    rollout: tuple[Any, ...]
    turns: list[tuple[Any, ...]]
    model_calls: list[tuple[Any, ...]]
    tool_calls: list[tuple[Any, ...]]
    gaps: list[tuple[Any, ...]]


def attempt_rows(row: Mapping[str, Any] | None, identity: AttemptIdentity) -> AttemptRows:
    """Every table row of one attempt but its ATIF and verdict columns and its findings."""
    row = row if isinstance(row, Mapping) else {}
    keys = identity.keys
    trajectory = _object(row.get("ng_trajectory"))
    capture = _object(row.get("ng_model_call_capture"))
    turns = _list(trajectory.get("turns")) if trajectory is not None else []
    calls = _list(trajectory.get("model_calls")) if trajectory is not None else []
    tools = _list(trajectory.get("tool_calls")) if trajectory is not None else []
    turn_rows = [(*keys, *_entry(index, turn, _TURN_FIELDS)) for index, turn in enumerate(turns)]
    call_rows = [(*keys, *values) for values in _model_calls(trajectory, calls, turns)] if trajectory is not None else []
    tool_rows = [(*keys, *_entry(index, tool, _TOOL_CALL_FIELDS)) for index, tool in enumerate(tools)]
    gap_rows = [(*keys, *values) for values in _gaps(row)]
    perf = _object(row.get("ng_perf")) or {}
    agent = _object(row.get("agent_ref")) or {}
    counted = trajectory is not None
    rollout = (
        *keys,
        identity.shard,
        identity.shard_file,
        identity.line,
        identity.output_line,
        _int(row.get("_ng_task_index")),
        _int(row.get("_ng_rollout_index")),
        _int(row.get("_ng_attempt_index")),
        _int(row.get("stage_index")),
        identity.rollout_id,
        _str(trajectory.get("task_id")) if trajectory is not None else None,
        _str(agent.get("name")),
        _str(row.get("_ng_environment_server")),
        identity.status,
        identity.reason,
        list(identity.notes),
        identity.repaired,
        _str(row.get("_ng_failure_class")),
        _number(row.get("reward")),
        _bool(row.get("resolved")),
        _metrics(row),
        _int(perf.get("num_turns")),
        _int(perf.get("num_tool_calls")),
        _float(perf.get("token_observability_coverage")),
        _int(perf.get("prompt_tokens")),
        _int(perf.get("cached_prompt_tokens")),
        _int(perf.get("completion_tokens")),
        _int(perf.get("reasoning_tokens")),
        _float(perf.get("total_latency_ms")),
        counted,
        len(_list(trajectory.get("invocations"))) if trajectory is not None else None,
        len(turn_rows) if counted else None,
        len(call_rows) if counted else None,
        len(tool_rows) if counted else None,
        len(gap_rows),
        _length(capture.get("calls")) if capture is not None else None,
        [_gap_code(gap) for gap in _list(capture.get("gaps"))] if capture is not None else None,
        identity.size,
    )
    return AttemptRows(rollout, turn_rows, call_rows, tool_rows, gap_rows)


def atif_columns(file: str | None, refusal: str | None) -> tuple[str, str | None, str | None]:
    """A main row's ATIF columns: exported to ``file``, refused with ``refusal``, or neither (withheld)."""
    if refusal is not None:
        return (REFUSED, None, refusal)
    if file is not None:
        return (EXPORTED, file, None)
    return (WITHHELD, None, None)


def verdict_columns(verdict: Mapping[str, Any] | None) -> tuple[str | None, int | None, list[str | None] | None]:
    """A main row's verdict columns from its line of ``rollout_verdicts.jsonl`` (None: no verdict)."""
    if verdict is None:
        return NO_VERDICT
    return (_str(verdict.get("verdict")), len(_list(verdict.get("findings"))), [_str(c) for c in _list(verdict.get("unobserved"))])


def finding_rows(verdict: Mapping[str, Any] | None, keys: Sequence[str]) -> list[tuple[Any, ...]]:
    """The ``findings`` rows of a verdict line; ``keys``: the attempt's four key columns."""
    if verdict is None:
        return []
    rows = []
    for index, entry in enumerate(_list(verdict.get("findings"))):
        finding = entry if isinstance(entry, Mapping) else {}
        check = _str(finding.get("check"))
        spec = CHECKS.get(check) if check is not None else None
        locator = _object(finding.get("locator"))
        detail = _object(finding.get("detail"))
        rows.append(
            (
                *keys,
                index,
                check if check is not None else "",
                spec.subject if spec is not None else None,
                _text(finding.get("locator")),
                _int(locator.get("turn")) if locator is not None else None,
                _str(locator.get("call_id")) if locator is not None else None,
                _text(finding.get("detail")),
                _str(detail.get("reason")) if detail is not None else None,
            )
        )
    return rows


def verdict_order(row: Mapping[str, Any] | None, output_line: int) -> tuple[tuple[int, Any], ...]:
    """Where a main row's verdict line sorts in ``rollout_verdicts.jsonl``: its health identity,
    ordered as ``evidence.health.verdict_order`` orders digests.

    The identity is the one health gives the row at ``output_line`` of ``rollouts.jsonl``
    (``record_identity`` with that line's ordinal; the unreadable identity for a line that
    did not decode or an identity 0.7.0 cannot type). Lines of equal identities keep the
    order of their rows, so the n-th row of an identity owns the n-th line of it.
    """
    if not isinstance(row, Mapping):
        identity = unreadable_identity(output_line)
    else:
        try:
            identity = record_identity(dict(row), output_line - 1)
        except InvalidIdentity:
            identity = unreadable_identity(output_line)
    return _order((identity.task, identity.rollout, identity.stage))


def verdict_line_order(verdict: Mapping[str, Any]) -> tuple[tuple[int, Any], ...]:
    """Where a line of ``rollout_verdicts.jsonl`` sorts, by the identity it states."""
    return _order((verdict.get("_ng_task_index"), verdict.get("_ng_rollout_index"), verdict.get("stage_index")))


def _order(parts: tuple[Any, Any, Any]) -> tuple[tuple[int, Any], ...]:
    """``evidence.health.verdict_order`` of (task, rollout, stage): ints first, then string forms."""
    return tuple((0, part) if isinstance(part, int) else (1, str(part)) for part in parts)


def _entry(index: int, value: Any, fields: tuple[tuple[str, Callable[[Any], Any]], ...]) -> tuple[Any, ...]:
    """A list entry's row: its position, then each field read as its column's type."""
    entry = value if isinstance(value, Mapping) else {}
    return (index, *(read(entry.get(key)) for key, read in fields))


def _model_calls(trajectory: Mapping[str, Any], calls: list[Any], turns: list[Any]) -> Iterator[tuple[Any, ...]]:
    """Each call's row: who owns it (ng_perf's rule) and the first turn naming it alone."""
    metas = [_object(call.get("response_metadata")) or {} if isinstance(call, Mapping) else {} for call in calls]
    names = [
        json_name(call.get("model_call_id"), meta.get("model_ref"), meta.get("response_id"))
        if isinstance(call, Mapping)
        else json_name(None, None, None)
        for call, meta in zip(calls, metas, strict=True)
    ]
    index = CallIndex(names)
    invocations = [inv for inv in _list(trajectory.get("invocations")) if isinstance(inv, Mapping)]
    owners = ng_perf_owners(
        index,
        (
            (_str(inv.get("invocation_id")), [json_ref_name(ref) for ref in _list(inv.get("model_calls")) if isinstance(ref, Mapping)])
            for inv in invocations
        ),
    )
    turn_of: dict[int, tuple[int | None, int | None]] = {}
    for turn_index, turn in enumerate(turns):
        if not isinstance(turn, Mapping):
            continue
        for ref in _list(turn.get("model_calls")):
            if isinstance(ref, Mapping):
                found = index.candidates(json_ref_name(ref))
                if len(found) == 1:
                    turn_of.setdefault(found[0], (turn_index, _int(turn.get("turn_no"))))
    for position, (entry, meta) in enumerate(zip(calls, metas, strict=True)):
        call = entry if isinstance(entry, Mapping) else {}
        tokens = _object(call.get("token_stats")) or {}
        model_ref = _object(meta.get("model_ref")) or {}
        on_turn, turn_no = turn_of.get(position, (None, None))
        owner = owners.get(position)
        yield (
            position,
            _str(call.get("model_call_id")),
            _str(meta.get("response_id")),
            owner,
            position in owners,
            on_turn,
            turn_no,
            _float(call.get("started_at")),
            _float(call.get("completed_at")),
            _float(call.get("duration_ms")),
            _str(model_ref.get("name")),
            _str(meta.get("model")),
            _str(meta.get("dialect")),
            _int(meta.get("status_code")),
            _str(meta.get("response_status")),
            _str(meta.get("finish_reason")),
            _str(meta.get("error_category")),
            _str(meta.get("response_source")),
            _int(meta.get("upstream_status_code")),
            _float(meta.get("latency_ttft_ms")),
            call_successful(meta.get("status_code"), meta.get("error_category"), meta.get("response_status")),
            _int(tokens.get("prompt_tokens")),
            _int(tokens.get("completion_tokens")),
            _int(tokens.get("reasoning_tokens")),
            _int(tokens.get("total_tokens")),
            _int(tokens.get("cached_tokens")),
        )


def _gaps(row: Mapping[str, Any]) -> Iterator[tuple[Any, ...]]:
    for origin in GAP_ORIGINS:
        holder = _object(row.get(origin))
        if holder is None:
            continue
        for index, gap in enumerate(_list(holder.get("gaps"))):
            if isinstance(gap, Mapping):
                code = _str(gap.get("code"))
                yield (origin, index, code, code in GAPS, _str(gap.get("invocation_id")), _text(gap.get("detail")))
            else:
                yield (origin, index, None, False, None, _text(gap))


def _gap_code(gap: Any) -> str | None:
    return _str(gap.get("code")) if isinstance(gap, Mapping) else None


def _metrics(row: Mapping[str, Any]) -> list[tuple[str, float]]:
    """Every top-level number or boolean, in row order (a number no double can hold is left out)."""
    pairs = []
    for key, value in row.items():
        number = _number(value)
        if number is not None:
            pairs.append((key, number))
    return pairs


def _object(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _length(value: Any) -> int | None:
    return len(value) if isinstance(value, list) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    """An integer that fits int64 (booleans are not integers here; neither are integral floats)."""
    if isinstance(value, int) and not isinstance(value, bool) and -_INT64 <= value < _INT64:
        return value
    return None


def _float(value: Any) -> float | None:
    """A finite number as a double (booleans are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer wider than any double
        return None
    return number if math.isfinite(number) else None


def _number(value: Any) -> float | None:
    """A number or boolean as a double (true 1, false 0)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    return _float(value)


def _present(value: Any) -> bool:
    """Whether a payload is there (its content stays out of the tables)."""
    return value is not None


def _text(value: Any) -> str | None:
    """A string as it is; any other non-null value as compact JSON."""
    if value is None or isinstance(value, str):
        return value
    return dumps(value).decode()


# the columns of ``turns`` and ``tool_calls`` after the position: (key in the entry, how it is read)
_TURN_FIELDS: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("invocation_id", _str),
    ("turn_no", _int),
    ("timestamp", _float),
    ("step_count", _int),
    ("resolved", _bool),
    ("answer", _present),
    ("reasoning_content", _present),
    ("question", _length),
    ("model_calls", _length),
)
_TOOL_CALL_FIELDS: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("tool_call_id", _str),
    ("invocation_id", _str),
    ("tool_name", _str),
    ("sandbox_id", _str),
    ("started_at", _float),
    ("completed_at", _float),
    ("duration_ms", _float),
    ("timing_source", _str),
    ("status", _str),
    ("error_type", _str),
    ("output", _present),
)
