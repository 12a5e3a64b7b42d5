"""Per-model call chains and whether each ended on a failed call.

Shared by the ``rollout_ended_on_failed_model_call`` check and the ``ended_on_error`` statistic,
which 0.7.0 computes with the same rule even when the check is ignored or unobserved.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evidence.health.calls import CallView


def failed_chain_ends(calls: Sequence[CallView]) -> list[tuple[list[CallView], CallView]]:
    """``(chain, last call)`` for every per-model chain that ended on failure, by first call.

    A chain ends on failure when every call failed, or when every call has a start time and the
    latest-started call (ties: the later list position) failed. A mixed chain with a missing
    start time cannot be ordered, so it never counts.
    """
    chains: dict[Any, list[CallView]] = {}
    for call in calls:
        chains.setdefault(_model_key(call), []).append(call)
    ended = []
    for chain in chains.values():
        last = max(chain, key=lambda call: (call.started_at or 0.0, call.position))
        if not any(call.failed for call in chain):
            continue
        timed = all(call.started_at is not None for call in chain)
        if all(call.failed for call in chain) or (timed and last.failed):
            ended.append((chain, last))
    return ended


def _model_key(call: CallView) -> tuple[Any, Any] | None:
    if call.model_ref is None:
        return None
    return (call.model_ref.get("type"), call.model_ref.get("name"))
