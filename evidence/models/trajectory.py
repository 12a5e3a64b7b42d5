"""The ``ng_trajectory`` v1.0 record family (spec: collection.md §8.1).

A trajectory reuses the observation models for what it shares with them (invocations, refs,
gaps, the tool-call fields) so a producer trajectory and an observation bundle validate the same
way. Every model forbids unknown fields: 0.7.0 refuses a producer trajectory with an extra key
(``producer_trajectory_invalid``). Field order is the serialisation order; float fields re-emit
integers as floats, as pydantic does in lax mode.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evidence.models.capture import ModelRef
from evidence.models.observations import (
    AgentInvocationRecord,
    ModelCallRef,
    ObservationGap,
    ToolCallRecord,
)

__all__ = [
    "ResponseMetadata",
    "TokenStats",
    "TrajectoryModelCall",
    "TrajectoryRecord",
    "TrajectoryToolCall",
    "TrajectoryTurn",
]

_STRICT = ConfigDict(extra="forbid", frozen=True)


class ResponseMetadata(BaseModel):
    """What the model server reported about one call, besides its body and token counts."""

    model_config = _STRICT

    response_id: str | None = None
    model_ref: ModelRef | None = None
    model: str | None = None
    dialect: str | None = None
    status_code: int | None = None
    response_status: str | None = None
    finish_reason: str | None = None
    upstream_attempted: bool | None = None
    response_source: str | None = None
    upstream_status_code: int | None = None
    local_response_reason: str | None = None
    error_category: str | None = None
    latency_ttft_ms: float | None = Field(default=None, ge=0)


class TokenStats(BaseModel):
    """Token counts of one call; None means the provider did not report the count."""

    model_config = _STRICT

    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)
    reasoning_tokens: int | None = Field(default=None, ge=0)
    total_tokens: int | None = Field(default=None, ge=0)
    cached_tokens: int | None = Field(default=None, ge=0)


class TrajectoryModelCall(BaseModel):
    """One model call as the trajectory sees it (payloads kept, unlike the capture's calls)."""

    model_config = _STRICT

    model_call_id: str | None = None
    started_at: float | None = None
    completed_at: float | None = None
    duration_ms: float | None = Field(default=None, ge=0)
    request: Any = None
    response: Any = None
    response_metadata: ResponseMetadata = Field(default_factory=ResponseMetadata)
    token_stats: TokenStats = Field(default_factory=TokenStats)


class TrajectoryTurn(BaseModel):
    """One question/answer step of an invocation."""

    model_config = _STRICT

    invocation_id: str
    task_id: str
    rollout_id: str
    turn_no: int = Field(ge=1)
    timestamp: float
    question: Any = None
    answer: Any = None
    reasoning_content: Any = None
    resolved: bool | None = None
    step_count: int = Field(ge=0)  # required (health_perf.md §1); no default in 0.7.0
    model_calls: list[ModelCallRef] = Field(default_factory=list)


class TrajectoryToolCall(ToolCallRecord):
    """An observed tool call plus the output the agent's conversation recorded for it."""

    model_config = _STRICT

    kind: Literal["tool_call"] = "tool_call"
    output: Any = None


class TrajectoryRecord(BaseModel):
    """``ng_trajectory``: one rollout's invocations, turns, model calls, tool calls and gaps."""

    model_config = _STRICT

    schema_version: Literal["1.0"] = "1.0"
    task_id: str
    rollout_id: str
    invocations: list[AgentInvocationRecord] = Field(default_factory=list)
    turns: list[TrajectoryTurn] = Field(default_factory=list)
    model_calls: list[TrajectoryModelCall] = Field(default_factory=list)
    tool_calls: list[TrajectoryToolCall] = Field(default_factory=list)
    gaps: list[ObservationGap] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check_consistency(self) -> TrajectoryRecord:
        """Refuse records whose ids collide or whose turns belong to another rollout."""
        invocation_ids = [invocation.invocation_id for invocation in self.invocations]
        if len(set(invocation_ids)) != len(invocation_ids):
            raise ValueError("invocation ids must be unique")
        call_ids = [call.model_call_id for call in self.model_calls if call.model_call_id]
        if len(set(call_ids)) != len(call_ids):
            raise ValueError("model_call_ids must be unique")
        for turn in self.turns:
            if turn.task_id != self.task_id or turn.rollout_id != self.rollout_id:
                raise ValueError("turn identity must match the trajectory identity")
        turn_keys = [(turn.invocation_id, turn.turn_no) for turn in self.turns]
        if len(set(turn_keys)) != len(turn_keys):
            raise ValueError("(invocation_id, turn_no) must be unique")
        return self
