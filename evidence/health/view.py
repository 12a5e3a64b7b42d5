"""What one readable rollout record shows to the health checks.

The record's ``ng_trajectory`` is validated against the 0.7.0 ``TrajectoryRecord`` and re-dumped,
so checks see every optional field (null when absent) and coerced numbers, exactly like 0.7.0.
Gap codes then decide which parts of the trajectory count as observed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evidence.gaps import (
    MODEL_CALL_CAPTURE_INCOMPLETE,
    MODEL_CALL_CAPTURE_RECORDS_UNREADABLE,
    MODEL_CALL_CAPTURE_UNREADABLE,
    MODEL_CALL_REFERENCE_AMBIGUOUS,
    MODEL_CALL_REFERENCE_CONFLICT,
    MODEL_CALL_REFERENCE_UNMATCHED,
    MODEL_CALLS_UNAVAILABLE,
    TRAJECTORY_PROJECTION_FAILED,
    TURN_MODEL_CALL_SCOPE_INCOMPLETE,
    TURNS_UNAVAILABLE,
)
from evidence.health.bindings import EMPTY_BINDING, Binding, bind, call_index, owned_refs, turn_refs
from evidence.health.calls import CallView
from evidence.models.trajectory import TrajectoryRecord

INCOMPLETE_CAPTURE_GAPS = frozenset(
    {
        MODEL_CALLS_UNAVAILABLE,
        MODEL_CALL_CAPTURE_INCOMPLETE,
        MODEL_CALL_CAPTURE_RECORDS_UNREADABLE,
        MODEL_CALL_CAPTURE_UNREADABLE,
    }
)
CONTRADICTION_KINDS = {
    MODEL_CALL_REFERENCE_UNMATCHED: "missing_captured_call",
    MODEL_CALL_REFERENCE_AMBIGUOUS: "duplicated_captured_call",
    MODEL_CALL_REFERENCE_CONFLICT: "conflicting_call_ownership",
}


@dataclass(frozen=True, slots=True)
class Usage:
    """Transcript token usage from ``response.usage``; invalid counts are 0 and not ``present``."""

    prompt: int
    completion: int
    present: bool


@dataclass(frozen=True, slots=True)
class RowView:
    """A readable record as the checks see it: canonical trajectory, flags, calls, bindings."""

    trajectory: dict[str, Any] | None
    trajectory_error: str | None
    gap_codes: frozenset[str]
    calls: tuple[CallView, ...]
    turn_view: Binding
    owned_view: Binding
    usage: Usage

    @property
    def observed_trajectory(self) -> dict[str, Any] | None:
        """The trajectory when there is one and its projection did not fail, else None."""
        return self.trajectory if TRAJECTORY_PROJECTION_FAILED not in self.gap_codes else None

    @property
    def trajectory_observed(self) -> bool:
        return self.observed_trajectory is not None

    @property
    def turns_observed(self) -> bool:
        return self.trajectory_observed and TURNS_UNAVAILABLE not in self.gap_codes

    @property
    def turn_call_scope_complete(self) -> bool:
        return self.trajectory_observed and TURN_MODEL_CALL_SCOPE_INCOMPLETE not in self.gap_codes

    @property
    def model_calls_observed(self) -> bool:
        return self.trajectory_observed and not self.gap_codes & INCOMPLETE_CAPTURE_GAPS

    @property
    def turns(self) -> list[dict[str, Any]]:
        trajectory = self.observed_trajectory
        return trajectory["turns"] if trajectory is not None else []

    @property
    def contradiction_gaps(self) -> list[dict[str, Any]]:
        """The reference-contradiction gaps, in gap order (only of an observed trajectory)."""
        trajectory = self.observed_trajectory
        if trajectory is None:
            return []
        return [gap for gap in trajectory["gaps"] if gap["code"] in CONTRADICTION_KINDS]


def build_view(record: dict[str, Any], *, canonical: bool = False) -> RowView:
    """Validate the record's trajectory and derive everything the checks and statistics read.

    ``canonical`` says the trajectory is already what validation would give back (the stage's
    own projection wrote it), so it is read as it is instead of being validated and re-dumped.
    """
    raw = record.get("ng_trajectory")
    trajectory, error = (raw, None) if canonical and isinstance(raw, dict) else canonical_trajectory(raw)
    gap_codes = frozenset(gap["code"] for gap in trajectory["gaps"]) if trajectory else frozenset()
    view = RowView(trajectory, error, gap_codes, (), EMPTY_BINDING, EMPTY_BINDING, transcript_usage(record))
    observed = view.observed_trajectory
    if observed is None:
        return view
    calls = tuple(CallView.from_canonical(i, call) for i, call in enumerate(observed["model_calls"]))
    index = call_index(calls)
    return RowView(
        observed,
        None,
        gap_codes,
        calls,
        bind(turn_refs(observed), calls, index),
        bind(owned_refs(observed), calls, index),
        view.usage,
    )


def canonical_trajectory(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """``(re-dumped trajectory, None)``, ``(None, None)`` when absent, or ``(None, error class)``."""
    if raw is None:
        return None, None
    try:
        return TrajectoryRecord.model_validate(raw).model_dump(mode="json"), None
    except Exception as exc:  # noqa: BLE001 - 0.7.0 records any validation failure by its class name
        return None, type(exc).__name__


def transcript_usage(record: dict[str, Any]) -> Usage:
    """``response.usage`` counts: ``input_tokens``/``output_tokens`` keys win when present."""
    response = record.get("response")
    usage = response.get("usage") if isinstance(response, dict) else None
    if not isinstance(usage, dict):
        return Usage(0, 0, False)
    prompt = _valid_count(usage["input_tokens"] if "input_tokens" in usage else usage.get("prompt_tokens"))
    completion = _valid_count(usage["output_tokens"] if "output_tokens" in usage else usage.get("completion_tokens"))
    return Usage(prompt or 0, completion or 0, prompt is not None and completion is not None)


def _valid_count(value: Any) -> int | None:
    """The value when it is a valid count (an int, not a bool, at least 0), else None."""
    return value if type(value) is int and value >= 0 else None
