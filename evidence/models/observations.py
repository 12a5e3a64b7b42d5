"""What an agent reports about its own run: ``ng_agent_observations`` (spec: collection.md §6.1).

Every model forbids unknown fields and otherwise uses pydantic's lax coercion, as 0.7.0 does;
an invalid bundle is never partially used (the join records ``agent_observation_join_failed``
and the projection ``agent_observations_invalid``). Dump with ``model_dump(mode="json")``: that
is the form 0.7.0 writes back, conversation items included (see ``evidence.models.conversation``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, model_validator

from evidence.models.capture import ModelRef
from evidence.models.conversation import ConversationItem

__all__ = [
    "AgentInvocationRecord",
    "AgentObservationBundle",
    "ContextCompactionRecord",
    "ModelCallRef",
    "ObservationGap",
    "ObservationRecord",
    "SandboxRecord",
    "ToolCallRecord",
]

NonNegativeFloat = Annotated[float, Field(ge=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]


class _Observation(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelCallRef(_Observation):
    """Points at one captured model call: by ``model_call_id``, or by ``(model_ref, response_id)``."""

    model_call_id: str | None = None
    model_ref: ModelRef | None = None
    response_id: str | None = None

    @model_validator(mode="after")
    def _identifies_a_call(self) -> ModelCallRef:
        if not self.model_call_id and (self.model_ref is None or not self.response_id):
            raise ValueError("a model call ref needs model_call_id, or model_ref and response_id")
        return self

    def key(self) -> tuple[str | None, tuple[str, str] | None, str | None]:
        """``(model_call_id, (type, name) or None, response_id)``: the form refs are compared in."""
        model_ref = None if self.model_ref is None else (self.model_ref.type, self.model_ref.name)
        return self.model_call_id, model_ref, self.response_id


class ObservationGap(_Observation):
    """A known hole in the evidence; ``(code, invocation_id, detail)`` identifies it."""

    code: str
    invocation_id: str | None = None
    detail: str | None = None

    def key(self) -> tuple[str, str | None, str | None]:
        return self.code, self.invocation_id, self.detail


class AgentInvocationRecord(_Observation):
    kind: Literal["agent_invocation"] = "agent_invocation"
    invocation_id: str
    parent_invocation_id: str | None = None
    spawned_by_tool_call_id: str | None = None
    status: Literal["completed", "failed", "incomplete", "unknown"] = "unknown"
    duration_ms: NonNegativeFloat | None = None
    error_type: str | None = None
    model_calls: list[ModelCallRef] = []
    conversation: list[ConversationItem] = []


class ToolCallRecord(_Observation):
    kind: Literal["tool_call"]
    invocation_id: str
    tool_call_id: str
    sandbox_id: str | None = None
    tool_name: str | None = None
    started_at: float | None = None
    completed_at: float | None = None
    duration_ms: NonNegativeFloat | None = None
    timing_source: Literal["executor", "artifact", "harness"] | None = None
    status: Literal["completed", "failed", "timeout", "cancelled", "incomplete", "unknown"] = "unknown"
    error_type: str | None = None

    @model_validator(mode="after")
    def _ordered_timing(self) -> ToolCallRecord:
        if self.started_at is not None and self.completed_at is not None and self.completed_at < self.started_at:
            raise ValueError("completed_at precedes started_at")
        return self


class ContextCompactionRecord(_Observation):
    kind: Literal["context_compaction"]
    invocation_id: str
    observed_at: float | None = None
    trigger: str | None = None
    tokens_before: NonNegativeInt | None = None
    tokens_after: NonNegativeInt | None = None
    outcome: Literal["completed", "failed", "aborted", "unknown"] = "unknown"
    summary: str | None = None
    first_kept_item_id: str | None = None
    before_model_call: ModelCallRef | None = None
    model_calls: list[ModelCallRef] = []
    after_model_call: ModelCallRef | None = None


class SandboxRecord(_Observation):
    kind: Literal["sandbox"]
    role: Literal["agent", "verifier", "environment"]
    provider: str | None = None
    sandbox_id: str | None = None
    outcome: Literal["completed", "failed", "timeout", "oom", "sandbox_error", "cancelled", "unknown"] = "unknown"
    exit_code: int | None = None
    wall_time_s: NonNegativeFloat | None = None
    cpu_time_s: NonNegativeFloat | None = None
    peak_memory_mib: NonNegativeFloat | None = None
    resource_usage_source: str | None = None
    error_type: str | None = None


ObservationRecord = Annotated[
    AgentInvocationRecord | ToolCallRecord | ContextCompactionRecord | SandboxRecord,
    Discriminator("kind"),
]


class AgentObservationBundle(_Observation):
    """``ng_agent_observations``: records in the agent's order plus the gaps it already knows."""

    source: str
    records: list[ObservationRecord] = []
    gaps: list[ObservationGap] = []

    @model_validator(mode="after")
    def _invocation_tree(self) -> AgentObservationBundle:
        parents: dict[str, str | None] = {}
        for record in self.invocations():
            if record.invocation_id in parents:
                raise ValueError(f"duplicate invocation_id {record.invocation_id!r}")
            parents[record.invocation_id] = record.parent_invocation_id
        for start, first in parents.items():
            seen = {start}
            parent = first
            while parent is not None and parent in parents:
                if parent in seen:
                    raise ValueError(f"invocation parent chain cycles at {parent!r}")
                seen.add(parent)
                parent = parents[parent]
        return self

    def invocations(self) -> list[AgentInvocationRecord]:
        """The agent invocations, in record order."""
        return [record for record in self.records if isinstance(record, AgentInvocationRecord)]

    def compactions(self) -> list[ContextCompactionRecord]:
        """The context compactions, in record order."""
        return [record for record in self.records if isinstance(record, ContextCompactionRecord)]

    def as_json(self) -> dict[str, Any]:
        """The JSON-mode dump 0.7.0 writes back into the row."""
        return self.model_dump(mode="json")
