"""The observation step of the capture merge: validate, associate, join, dump (spec: §5.5)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evidence.gaps import COMPACTION_MODEL_CALL_JOIN_FAILED
from evidence.models.capture import ModelCallRecord
from evidence.models.observations import AgentObservationBundle, ObservationGap
from evidence.observations.claude_code import associate_claude_code_compaction_calls
from evidence.observations.join import join_model_call_observations

__all__ = ["join_observations", "joined_bundle"]


def join_observations(raw_bundle: Any, calls: Sequence[ModelCallRecord]) -> dict[str, Any]:
    """The joined bundle as 0.7.0 writes it back into ``ng_agent_observations``.

    Raises:
        pydantic.ValidationError: the bundle is invalid (the caller records
            ``agent_observation_join_failed`` and keeps the raw value).
    """
    return joined_bundle(raw_bundle, calls).as_json()


def joined_bundle(raw_bundle: Any, calls: Sequence[ModelCallRecord]) -> AgentObservationBundle:
    """The joined bundle itself, whose JSON dump :func:`join_observations` returns.

    Raises:
        pydantic.ValidationError: the bundle is invalid.
    """
    bundle = AgentObservationBundle.model_validate(raw_bundle)
    if bundle.source == "claude_code":
        try:
            bundle = associate_claude_code_compaction_calls(bundle, calls)
        except Exception:  # noqa: BLE001 - 0.7.0 degrades any associator failure to a gap
            gap = ObservationGap(code=COMPACTION_MODEL_CALL_JOIN_FAILED)
            bundle = bundle.model_copy(update={"gaps": [*bundle.gaps, gap]})
    return join_model_call_observations(bundle, calls)
