"""Step 4: project the capture's calls and merge them into the producer's (collection.md §8.5).

Calls merge by ``model_call_id`` only and each producer id is consumed once, so a capture id
that occurs twice ends up duplicated and the record fails validation, exactly as in 0.7.0.
"""

from __future__ import annotations

from typing import Any

from evidence.models.trajectory import TrajectoryModelCall
from evidence.projection.draft import Draft

__all__ = ["merge_capture_calls"]

_METADATA_KEYS = (
    "response_id",
    "model_ref",
    "model",
    "dialect",
    "status_code",
    "response_status",
    "finish_reason",
    "upstream_attempted",
    "response_source",
    "upstream_status_code",
    "local_response_reason",
    "error_category",
    "latency_ttft_ms",
)
# trajectory token_stats name <- capture call field
_TOKEN_SOURCES = (
    ("prompt_tokens", "tokens_in"),
    ("completion_tokens", "tokens_out"),
    ("reasoning_tokens", "tokens_reasoning"),
    ("total_tokens", "tokens_total"),
    ("cached_tokens", "cached_tokens"),
)
_NESTED = ("response_metadata", "token_stats")


def merge_capture_calls(capture: dict[str, Any], draft: Draft) -> None:
    """Merge every object in ``capture["calls"]`` into ``draft.model_calls`` (producer first).

    Any id but null merges, ``""`` too: 0.7.0 keys the producer calls by every id that is not
    None (the last of several equal ids wins, and each is merged into once).
    """
    producer_positions = {call.model_call_id: index for index, call in enumerate(draft.model_calls) if call.model_call_id is not None}
    for call in capture.get("calls") or []:
        if not isinstance(call, dict):
            continue
        projected = _project(call)
        call_id = projected["model_call_id"]
        position = producer_positions.pop(call_id, None) if call_id is not None else None
        if position is None:
            draft.model_calls.append(TrajectoryModelCall.model_validate(projected))
        else:
            draft.model_calls[position] = _merge(draft.model_calls[position], projected)


def _project(call: dict[str, Any]) -> dict[str, Any]:
    """The trajectory form of one capture call: non-null metadata, valid counts only."""
    metadata = {key: call[key] for key in _METADATA_KEYS if call.get(key) is not None}
    response = call.get("response")
    if isinstance(response, dict) and isinstance(response.get("status"), str):
        metadata.setdefault("response_status", response["status"])
    return {
        "model_call_id": call.get("model_call_id"),
        "started_at": call.get("started_at"),
        "completed_at": call.get("completed_at"),
        "duration_ms": call.get("latency_total_ms"),
        "request": _payload(call, "request"),
        "response": _payload(call, "response"),
        "response_metadata": metadata,
        "token_stats": {name: call[source] for name, source in _TOKEN_SOURCES if _is_count(call.get(source))},
    }


def _payload(call: dict[str, Any], key: str) -> Any:
    """The parsed body, else the raw text (an unparsable or streamed body still counts)."""
    value = call.get(key)
    return value if value is not None else call.get(f"{key}_raw")


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _merge(producer: TrajectoryModelCall, projected: dict[str, Any]) -> TrajectoryModelCall:
    """Producer call overlaid with the capture's non-null values (the capture wins)."""
    merged = producer.model_dump(mode="json")
    for key in _NESTED:
        merged[key] = {**merged[key], **projected[key]}
    merged.update({key: value for key, value in projected.items() if key not in _NESTED and value is not None})
    return TrajectoryModelCall.model_validate(merged)
