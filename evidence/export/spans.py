"""One rollout's ``ng_trajectory`` as an OpenTelemetry trace (GenAI semantic conventions).

The span tree, per invocation: an ``invoke_agent`` span; under it a ``chat`` span per model
call the invocation owns (0.7.0's ng_perf ownership rule: unowned judge calls and unclaimed
retries are not the agent's) and an ``execute_tool`` span per tool record. A subagent's
``invoke_agent`` span hangs under the ``execute_tool`` span of the tool call that spawned it,
else under its parent's ``invoke_agent`` span; an invocation without a parent in the
trajectory is a root.

Nothing is invented. Chat and tool spans take their times from their records; an
``invoke_agent`` span has no timestamps of its own, so it spans its descendants' times. A
missing time stays ``None`` (sent as OTLP's 0, "unknown"), a missing count or name is no
attribute. Rows with no trajectory to show are skipped with the reason. The first root span
carries the rollout's reward and verdict as evaluation events (``evidence.export.evaluations``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import ValidationError

from evidence.export.evaluations import EventModel, RolloutVerdict, evaluation_events
from evidence.export.ids import TraceIdentity
from evidence.health.calls import CallView
from evidence.models.observations import AgentInvocationRecord
from evidence.models.trajectory import TrajectoryModelCall, TrajectoryRecord, TrajectoryToolCall
from evidence.ng_perf import owned_calls

__all__ = ["SERVICE_NAME", "SpanModel", "TraceModel", "TraceSkipped", "rollout_trace"]

SERVICE_NAME = "evidence-stage"
AttributeValue = str | int | float | bool | tuple[str, ...]
Status = Literal["unset", "ok", "error"]
SpanKind = Literal["internal", "client"]

_INVOCATION_STATUS: Mapping[str, Status] = {"completed": "ok", "failed": "error"}
_TOOL_STATUS: Mapping[str, Status] = {"completed": "ok", "failed": "error", "timeout": "error"}


@dataclass(frozen=True, slots=True)
class SpanModel:
    """One span as the wire needs it; times in Unix nanoseconds, ``None`` when unknown."""

    span_id: bytes
    parent_id: bytes | None
    name: str
    kind: SpanKind
    start_ns: int | None
    end_ns: int | None
    attributes: Mapping[str, AttributeValue]
    status: Status = "unset"
    events: tuple[EventModel, ...] = ()


@dataclass(frozen=True, slots=True)
class TraceModel:
    """One rollout's trace: resource attributes and its spans (roots first, then depth-first)."""

    trace_id: bytes
    resource: Mapping[str, AttributeValue]
    spans: tuple[SpanModel, ...]


@dataclass(frozen=True, slots=True)
class TraceSkipped:
    """A row that yields no trace, and why (counted by the exporter, never sent)."""

    reason: str


def rollout_trace(row: Mapping[str, Any], identity: TraceIdentity, verdict: RolloutVerdict | None = None) -> TraceModel | TraceSkipped:
    """The trace of one enriched main row, or why there is none.

    The first root span (the rollout's ``invoke_agent``) carries the row's reward and, when
    ``verdict`` is given (its verdict line, :class:`evidence.export.evaluations.RolloutVerdicts`),
    its health verdict as ``gen_ai.evaluation.result`` events at the span's end.
    """
    raw = row.get("ng_trajectory")
    if not isinstance(raw, dict):
        return TraceSkipped("no ng_trajectory")
    try:
        record = TrajectoryRecord.model_validate(raw)
    except ValidationError:
        return TraceSkipped("ng_trajectory does not validate")
    if not record.invocations:
        return TraceSkipped("ng_trajectory has no invocations")
    agent = _agent_name(row)
    builder = _TraceBuilder(record, identity, agent)
    resource: dict[str, AttributeValue] = {
        "service.name": SERVICE_NAME,
        "evidence_stage.job.id": identity.job_id,
        "evidence_stage.run.id": identity.run_id,
        "evidence_stage.attempt.key": identity.attempt_key,
        "evidence_stage.task.id": record.task_id,
        "evidence_stage.rollout.id": record.rollout_id,
    }
    if agent is not None:
        resource["gen_ai.agent.name"] = agent
    root, *rest = builder.spans()
    root = replace(root, events=evaluation_events(row, verdict, root.end_ns))
    return TraceModel(identity.trace_id, resource, (root, *rest))


def _agent_name(row: Mapping[str, Any]) -> str | None:
    agent_ref = row.get("agent_ref")
    name = agent_ref.get("name") if isinstance(agent_ref, dict) else None
    return name if isinstance(name, str) and name else None


def _nanoseconds(seconds: float | None) -> int | None:
    """Seconds as nanoseconds, kept to the microsecond: a float epoch holds no more than that."""
    return round(seconds * 1_000_000) * 1000 if seconds is not None and math.isfinite(seconds) else None


def _present(pairs: Iterable[tuple[str, AttributeValue | None]]) -> dict[str, AttributeValue]:
    return {key: value for key, value in pairs if value is not None and value != ""}


class _TraceBuilder:
    """Builds the spans of one validated trajectory; every id comes from the identity."""

    def __init__(self, record: TrajectoryRecord, identity: TraceIdentity, agent: str | None) -> None:
        self.record, self.identity, self.agent = record, identity, agent
        self.by_id = {invocation.invocation_id: invocation for invocation in record.invocations}
        owners = owned_calls(record)
        self.calls_of: dict[str, list[int]] = {}
        for position in sorted(owners):
            self.calls_of.setdefault(owners[position], []).append(position)
        self.tools_of: dict[str, list[tuple[TrajectoryToolCall, bytes]]] = {}
        occurrences: Counter[tuple[str, str]] = Counter()
        for tool in record.tool_calls:
            key = (tool.invocation_id, tool.tool_call_id)
            span_id = identity.span_id("tool_call", f"{key[0]}\x00{key[1]}\x00{occurrences[key]}")
            occurrences[key] += 1
            self.tools_of.setdefault(tool.invocation_id, []).append((tool, span_id))
        self.children: dict[str, list[AgentInvocationRecord]] = {}
        for invocation in record.invocations:
            parent = self._parent(invocation)
            if parent is not None:
                self.children.setdefault(parent, []).append(invocation)

    def _parent(self, invocation: AgentInvocationRecord) -> str | None:
        """The parent invocation id when it exists and its chain does not come back here (a root otherwise)."""
        if invocation.parent_invocation_id not in self.by_id:
            return None
        seen = {invocation.invocation_id}
        parent: str | None = invocation.parent_invocation_id
        while parent in self.by_id and parent not in seen:
            seen.add(parent)
            parent = self.by_id[parent].parent_invocation_id
        return None if parent == invocation.invocation_id else invocation.parent_invocation_id

    def spans(self) -> tuple[SpanModel, ...]:
        out: list[SpanModel] = []
        for invocation in self.record.invocations:
            if self._parent(invocation) is None:
                self._invocation(invocation, None, out)
        return tuple(out)

    def _invocation(
        self, invocation: AgentInvocationRecord, parent_span: bytes | None, out: list[SpanModel]
    ) -> tuple[int | None, int | None]:
        """Append the invocation's span and its subtree; return the subtree's time envelope."""
        span_id = self.identity.span_id("invocation", invocation.invocation_id)
        index = len(out)
        out.append(SpanModel(span_id, parent_span, "", "internal", None, None, {}))  # placeholder, times known last
        times: list[tuple[int | None, int | None]] = []
        for position in self.calls_of.get(invocation.invocation_id, []):
            out.append(self._chat(position, self.record.model_calls[position], span_id))
            times.append((out[-1].start_ns, out[-1].end_ns))
        tool_spans: dict[str, bytes] = {}
        for tool, tool_span_id in self.tools_of.get(invocation.invocation_id, []):
            tool_spans.setdefault(tool.tool_call_id, tool_span_id)
            out.append(self._tool(tool, tool_span_id, span_id))
            times.append((out[-1].start_ns, out[-1].end_ns))
        times.extend(
            self._invocation(sub, tool_spans.get(sub.spawned_by_tool_call_id or "", span_id), out)
            for sub in self.children.get(invocation.invocation_id, [])
        )
        start = min((t for t, _ in times if t is not None), default=None)
        end = max((t for _, t in times if t is not None), default=None)
        out[index] = SpanModel(
            span_id,
            parent_span,
            f"invoke_agent {self.agent}" if self.agent else "invoke_agent",
            "internal",
            start,
            end,
            _present(
                (
                    ("gen_ai.operation.name", "invoke_agent"),
                    ("gen_ai.agent.name", self.agent),
                    ("evidence_stage.invocation.id", invocation.invocation_id),
                    ("evidence_stage.invocation.parent_id", invocation.parent_invocation_id),
                    ("evidence_stage.invocation.spawned_by_tool_call_id", invocation.spawned_by_tool_call_id),
                    ("evidence_stage.invocation.status", invocation.status),
                    ("evidence_stage.invocation.duration_ms", invocation.duration_ms),
                    ("error.type", invocation.error_type),
                )
            ),
            _INVOCATION_STATUS.get(invocation.status, "unset"),
        )
        return start, end

    def _chat(self, position: int, call: TrajectoryModelCall, parent: bytes) -> SpanModel:
        metadata, tokens = call.response_metadata, call.token_stats
        record_id = call.model_call_id or f"#{position}"
        view = CallView.from_canonical(position, call.model_dump(mode="json"))
        return SpanModel(
            self.identity.span_id("model_call", record_id),
            parent,
            f"chat {metadata.model}" if metadata.model else "chat",
            "client",
            _nanoseconds(call.started_at),
            _nanoseconds(call.completed_at),
            _present(
                (
                    ("gen_ai.operation.name", "chat"),
                    ("gen_ai.response.model", metadata.model),
                    ("gen_ai.response.id", metadata.response_id),
                    ("gen_ai.response.finish_reasons", (metadata.finish_reason,) if metadata.finish_reason else None),
                    ("gen_ai.usage.input_tokens", tokens.prompt_tokens),
                    ("gen_ai.usage.output_tokens", tokens.completion_tokens),
                    ("gen_ai.usage.cache_read.input_tokens", tokens.cached_tokens),
                    ("evidence_stage.model_call.id", call.model_call_id),
                    ("evidence_stage.model_call.duration_ms", call.duration_ms),
                    ("http.response.status_code", metadata.status_code),
                    ("error.type", metadata.error_category),
                )
            ),
            "error" if view.failed else "unset",
        )

    def _tool(self, tool: TrajectoryToolCall, span_id: bytes, parent: bytes) -> SpanModel:
        return SpanModel(
            span_id,
            parent,
            f"execute_tool {tool.tool_name}" if tool.tool_name else "execute_tool",
            "internal",
            _nanoseconds(tool.started_at),
            _nanoseconds(tool.completed_at),
            _present(
                (
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", tool.tool_name),
                    ("gen_ai.tool.call.id", tool.tool_call_id),
                    ("evidence_stage.tool.status", tool.status),
                    ("evidence_stage.tool.duration_ms", tool.duration_ms),
                    ("error.type", tool.error_type),
                )
            ),
            _TOOL_STATUS.get(tool.status, "unset"),
        )
