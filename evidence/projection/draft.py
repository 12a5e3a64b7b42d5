"""The trajectory under construction, filled step by step in 0.7.0's order (collection.md §8)."""

from __future__ import annotations

from dataclasses import dataclass, field

from evidence.models.observations import AgentInvocationRecord, ObservationGap
from evidence.models.trajectory import TrajectoryModelCall, TrajectoryToolCall, TrajectoryTurn

__all__ = ["Draft", "gap"]


@dataclass(slots=True)
class Draft:
    """Mutable working lists of one projection; turned into a TrajectoryRecord at the end.

    The steps append to it rather than return fragments because 0.7.0 keeps what a step already
    added when that step fails part-way (an invalid observation tool keeps earlier invocations).
    """

    invocations: list[AgentInvocationRecord] = field(default_factory=list)
    turns: list[TrajectoryTurn] = field(default_factory=list)
    model_calls: list[TrajectoryModelCall] = field(default_factory=list)
    tool_calls: list[TrajectoryToolCall] = field(default_factory=list)
    gaps: list[ObservationGap] = field(default_factory=list)
    producer_read: bool = False
    """A valid producer trajectory was read: its (possibly empty) turns are believed."""


def gap(code: str, *, detail: str | None = None) -> ObservationGap:
    """A trajectory gap without an invocation, the form every synthesized gap takes."""
    return ObservationGap(code=code, invocation_id=None, detail=detail)
