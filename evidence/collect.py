"""The per-row collection sequence of NeMo Gym 0.7.0, applied post hoc (collection.md §1, §11).

For a persisted row: decide no_result, merge the model-call capture (with the observation join),
project ``ng_trajectory``, build ``ng_perf``, with observability on. Where 0.7.0 would raise on
a row, the row comes back unchanged with the reason in ``rejected``; nothing here raises for
content problems.

0.7.0 worked on two deep copies of the row: the dispatched input (``row``, read only for the
trajectory identity) and the ``/run`` reply (``result``, everything else). Post hoc both are the
same persisted row, and no step writes the identity keys (``task_id``, ``problem_id``,
``instance_id``, ``_ng_task_index``, ``_ng_rollout_index``, ``_ng_attempt_index``,
``_ng_rollout_id``), so reading the identity from the input while writing a shallow copy is
equivalent without copying payloads. Every step assigns top-level keys of the copy and rebuilds
the nested containers it changes, so the caller's row is never modified.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evidence.capture import CaptureLookup, merge_capture
from evidence.errors import RowRejected
from evidence.gaps import MODEL_CALL_CAPTURE_NO_RECORDS, MULTIMODAL_HISTORY_REDACTED
from evidence.models.observations import AgentObservationBundle
from evidence.models.trajectory import TrajectoryRecord
from evidence.ng_perf import attach_ng_perf
from evidence.projection import attach_joined_trajectory
from evidence.roundtrip import decodes_to_itself, json_dump_decodes_to_itself

__all__ = ["CollectedRow", "collect_row"]

_NO_RESULT_CLASSES = frozenset({"agent_request_failed", "agent_run_error", "environment_server_failed"})
_EVIDENCE_KEYS = ("ng_model_call_capture", "ng_agent_observations", "ng_trajectory")
_WALKED_KEYS = ("ng_model_call_capture", "ng_perf")  # written here, besides the trajectory and the observations


@dataclass(frozen=True, slots=True)
class CollectedRow:
    """The outcome of collecting one row.

    Attributes:
        row: the enriched row; for a rejected row, the input row itself (unchanged).
        rejected: set when 0.7.0 would raise on this row; kind and message are 0.7.0's.
        repaired: the input capture said ``model_call_capture_no_records`` and the rebuilt
            capture has calls (the capture appeared after the row was first collected).
        trajectory: the validated record whose JSON dump is ``row["ng_trajectory"]``, so that
            dump is already in canonical form (a reader validating it gets it back unchanged);
            None when the projection attached nothing of its own.
        observations: the joined bundle whose JSON dump the capture merge wrote into
            ``row["ng_agent_observations"]``; None when it wrote none. (A failed projection may
            add a gap to that value, but then ``trajectory`` is None.)
    """

    row: dict[str, Any]
    rejected: RowRejected | None
    repaired: bool
    trajectory: TrajectoryRecord | None = None
    observations: AgentObservationBundle | None = None

    @property
    def projected(self) -> bool:
        return self.trajectory is not None

    def decodes_to_itself(self) -> bool:
        """Whether the enriched row, once orjson has written it, reads back as itself (values and types).

        For a row parsed by orjson: collection replaces only its evidence keys and ``ng_perf``,
        every other value is the parsed input's. The trajectory and the joined observations are
        checked on their validated models (walking their dumps took twice as long); the other
        rebuilt values are walked (call metadata without payloads, ng_perf: small next to the
        trajectory, which holds the conversation).
        """
        if self.trajectory is None or not json_dump_decodes_to_itself(self.trajectory):
            return False
        if self.observations is not None:
            if not json_dump_decodes_to_itself(self.observations):
                return False
        elif not decodes_to_itself(self.row.get("ng_agent_observations")):  # the input's own, or none
            return False
        return all(decodes_to_itself(self.row[key]) for key in _WALKED_KEYS if key in self.row)


def collect_row(row: dict[str, Any], lookup: CaptureLookup) -> CollectedRow:
    """Apply 0.7.0's per-row sequence to a persisted row (observability on, one capture dir).

    Args:
        row: the persisted rollout row; it is not modified.
        lookup: finds the capture files of a rollout id.
    """
    try:
        no_result = _is_no_result(row)
    except TypeError as exc:  # an unhashable failure class, as 0.7.0's membership test raises
        return CollectedRow(row=row, rejected=RowRejected("TypeError", str(exc)), repaired=False)
    result = dict(row)
    projected = joined = None
    if not no_result:
        try:
            # the joined observation bundle, which the projection takes instead of validating its dump again
            joined = merge_capture(result, lookup, include_payloads=not _payloads_redacted(result))
        except RowRejected as exc:  # kept without traceback or cause, whose frames would hold the row in a cycle
            return CollectedRow(row=row, rejected=RowRejected(exc.kind, exc.message), repaired=False)
    if any(key in result for key in _EVIDENCE_KEYS):
        projected = attach_joined_trajectory(row, result, joined)
    attach_ng_perf(result, _rollout_latency_ms(row), projected)
    return CollectedRow(row=result, rejected=None, repaired=_is_repair(row, result), trajectory=projected, observations=joined)


def _is_no_result(result: dict[str, Any]) -> bool:
    """A failure that produced no rollout: its capture is not merged (§1 step 4).

    Raises:
        TypeError: the failure class is unhashable (the set membership test raises first).
    """
    return result.get("_ng_failure_class") in _NO_RESULT_CLASSES or bool(result.get("_ng_dispatch_drained"))


def _payloads_redacted(result: dict[str, Any]) -> bool:
    """The agent redacted multimodal history, so the capture's bodies must not be persisted."""
    keys = ("ng_trajectory", "ng_agent_observations")
    return any(_has_gap(result.get(key), MULTIMODAL_HISTORY_REDACTED) for key in keys)


def _has_gap(container: Any, code: str) -> bool:
    if not isinstance(container, dict) or not isinstance(container.get("gaps"), list):
        return False
    return any(isinstance(item, dict) and item.get("code") == code for item in container["gaps"])


def _rollout_latency_ms(row: dict[str, Any]) -> float | None:
    """The previously persisted rollout wall clock, the only post-hoc source of it."""
    perf = row.get("ng_perf")
    latency = perf.get("total_latency_ms") if isinstance(perf, dict) else None
    return latency if isinstance(latency, (int, float)) and not isinstance(latency, bool) else None


def _is_repair(row: dict[str, Any], result: dict[str, Any]) -> bool:
    capture = result.get("ng_model_call_capture")
    rebuilt_has_calls = isinstance(capture, dict) and isinstance(capture.get("calls"), list) and bool(capture["calls"])
    return rebuilt_has_calls and _has_gap(row.get("ng_model_call_capture"), MODEL_CALL_CAPTURE_NO_RECORDS)
