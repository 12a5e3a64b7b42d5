"""Steps 5 and 7: capture gaps, synthesized gaps and de-duplication (collection.md §8.6, §8.8)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from evidence.gaps import (
    CONVERSATION_UNAVAILABLE,
    MODEL_CALL_CAPTURE_GAP_INVALID,
    MODEL_CALLS_UNAVAILABLE,
    TURNS_UNAVAILABLE,
)
from evidence.models.observations import ObservationGap
from evidence.projection.draft import Draft, gap

__all__ = ["capture_gaps", "deduplicated", "synthesized_gaps"]


def capture_gaps(capture: dict[str, Any]) -> list[ObservationGap]:
    """The capture's gap objects as trajectory gaps; an invalid one is replaced, not dropped."""
    gaps = []
    for raw in capture.get("gaps") or []:
        if not isinstance(raw, dict):
            continue
        try:
            gaps.append(ObservationGap.model_validate(raw))
        except ValidationError:
            gaps.append(gap(MODEL_CALL_CAPTURE_GAP_INVALID))
    return gaps


def synthesized_gaps(draft: Draft) -> list[ObservationGap]:
    """What the finished projection is missing. A valid producer with zero turns is believed."""
    gaps = []
    if not draft.model_calls:
        gaps.append(gap(MODEL_CALLS_UNAVAILABLE))
    if not draft.turns and not draft.producer_read:
        gaps.append(gap(TURNS_UNAVAILABLE))
    if not any(invocation.conversation for invocation in draft.invocations):
        gaps.append(gap(CONVERSATION_UNAVAILABLE))
    return gaps


def deduplicated(gaps: list[ObservationGap]) -> list[ObservationGap]:
    """Gaps with repeats of ``(code, invocation_id, detail)`` removed, first position kept."""
    seen: set[tuple[str, str | None, str | None]] = set()
    unique = []
    for item in gaps:
        key = (item.code, item.invocation_id, item.detail)
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return unique
