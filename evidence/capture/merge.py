"""``merge_model_call_capture``: fold a rollout's capture into its row (spec: collection.md §5).

The row is mutated in place exactly like 0.7.0 does it: ``ng_model_call_capture`` keeps its
position or is appended, ``ng_agent_observations`` is rewritten in place with the joined bundle.
Files are the caller's business: a :data:`CaptureLookup` hands over the bytes for a rollout id.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evidence.capture.metrics import aggregate_metrics
from evidence.capture.reading import read_capture
from evidence.errors import RowRejected
from evidence.gaps import (
    AGENT_OBSERVATION_JOIN_FAILED,
    MODEL_CALL_CAPTURE_INCOMPLETE,
    MODEL_CALL_CAPTURE_NO_RECORDS,
    MODEL_CALL_CAPTURE_RECORDS_UNREADABLE,
    MODEL_CALL_CAPTURE_UNREADABLE,
)
from evidence.identity import capture_rollout_id, check_capture_file_id
from evidence.models.capture import ModelCallRecord
from evidence.models.observations import AgentObservationBundle
from evidence.observations import joined_bundle

__all__ = ["CAPTURE_SUFFIX", "MARKER_SUFFIX", "CaptureFiles", "CaptureLookup", "merge_capture", "merge_model_call_capture"]

CAPTURE_SUFFIX = ".capture.jsonl"
"""``<rollout_id>.capture.jsonl``: a rollout's model calls, one exchange per line."""
MARKER_SUFFIX = ".capture.incomplete"
"""``<rollout_id>.capture.incomplete``: a capture write failed during the run."""
NAME_MAX = 255
"""Longest file name, in bytes, on the local file systems 0.7.0's capture store lives on: its
existence check of a longer name raises ``OSError`` (ENAMETOOLONG) instead of answering."""


@dataclass(frozen=True, slots=True)
class CaptureFiles:
    """What the capture directory holds for one rollout id."""

    jsonl: bytes | None
    """Bytes of ``<rollout_id>.capture.jsonl``; None if that file does not exist."""
    incomplete: bool
    """``<rollout_id>.capture.incomplete`` exists (a write failed during the run)."""
    unreadable: bool = False
    """Reading the jsonl failed permanently (I/O error)."""


CaptureLookup = Callable[[str], CaptureFiles | None]
"""rollout id -> its capture files, or None when neither file exists."""


def _gap(code: str, detail: str | None = None) -> dict[str, Any]:
    """A capture gap; null members are omitted in this container."""
    return {"code": code} if detail is None else {"code": code, "detail": detail}


def _too_long(name: str) -> bool:
    return len(name.encode()) > NAME_MAX


def _read(rollout_id: str, files: CaptureFiles | None) -> tuple[list[ModelCallRecord], list[dict[str, Any]]]:
    """Records and capture gaps, in 0.7.0's emission order.

    0.7.0 looks for the capture file, then (only when it is not there) for the marker, before
    reading; it checks the marker again after reading, where any error means an unreadable
    capture. A name past ``NAME_MAX`` fails whichever of those checks meets it first.

    Raises:
        RowRejected: a name 0.7.0 checks before reading is longer than ``NAME_MAX``.
    """
    found = files is not None and (files.jsonl is not None or files.unreadable)
    for name in (rollout_id + CAPTURE_SUFFIX,) if found else (rollout_id + CAPTURE_SUFFIX, rollout_id + MARKER_SUFFIX):
        if _too_long(name):
            raise RowRejected("OSError", f"[Errno 36] File name too long: {name!r}")
    if files is None:
        return [], [_gap(MODEL_CALL_CAPTURE_NO_RECORDS)]
    if files.unreadable:
        return [], [_gap(MODEL_CALL_CAPTURE_UNREADABLE)]
    records, invalid = read_capture(files.jsonl or b"")
    gaps = []
    if invalid:
        gaps.append(_gap(MODEL_CALL_CAPTURE_RECORDS_UNREADABLE, f"count={invalid}"))
    if _too_long(rollout_id + MARKER_SUFFIX):
        return [], [*gaps, _gap(MODEL_CALL_CAPTURE_UNREADABLE)]
    if files.incomplete:
        gaps.append(_gap(MODEL_CALL_CAPTURE_INCOMPLETE))
    elif not records and not invalid:
        gaps.append(_gap(MODEL_CALL_CAPTURE_NO_RECORDS))
    return records, gaps


def merge_model_call_capture(record: dict[str, Any], lookup: CaptureLookup, *, include_payloads: bool) -> None:
    """Attach ``ng_model_call_capture`` and join ``ng_agent_observations`` (0.7.0 semantics).

    A record without a rollout id is left untouched. The caller has already decided that
    observability is on and the row is not a no-result row.

    Raises:
        RowRejected: the rollout id is invalid, or names a capture file or marker longer than
            ``NAME_MAX`` (raised before the record is touched).
    """
    merge_capture(record, lookup, include_payloads=include_payloads)


def merge_capture(record: dict[str, Any], lookup: CaptureLookup, *, include_payloads: bool) -> AgentObservationBundle | None:
    """:func:`merge_model_call_capture`, returning the joined bundle whose JSON dump it wrote into
    ``ng_agent_observations`` (None when it wrote none), so the projection need not validate
    that dump again.

    Raises:
        RowRejected: as :func:`merge_model_call_capture`.
    """
    rollout_id = capture_rollout_id(record)
    if rollout_id is None:
        return None
    check_capture_file_id(rollout_id)
    records, gaps = _read(rollout_id, lookup(rollout_id))
    joined = None
    if record.get("ng_agent_observations") is not None:
        try:
            joined = joined_bundle(record["ng_agent_observations"], records)
            record["ng_agent_observations"] = joined.as_json()
        except Exception:  # noqa: BLE001 - 0.7.0 turns any join failure into a gap, keeping the raw bundle
            joined = None
            gaps.append(_gap(AGENT_OBSERVATION_JOIN_FAILED))
    attachment: dict[str, Any] = {
        "rollout_id": rollout_id,
        "metrics": aggregate_metrics(records),
        "calls": [call.as_call(include_payloads=include_payloads) for call in records],
    }
    if gaps:
        attachment["gaps"] = gaps
    record["ng_model_call_capture"] = attachment
    return joined
