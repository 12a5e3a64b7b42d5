"""What a captured model call contributes to its agent step (0.7.0 §5.9).

Only ``response_metadata`` and ``token_stats`` are evidence; raw provider payloads are copied
verbatim and never interpreted. A step is exported only when the metadata proves a completed
response of the right kind (tool calls vs text) and the token counts are self-consistent.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from evidence.atif.record import MODEL_CALL_FIELDS, RESPONSE_METADATA_FIELDS, TOKEN_FIELDS
from evidence.errors import AtifExportError

__all__ = ["check_completion", "check_tokens", "dump_model_call", "iso_timestamp", "step_metrics"]

_INCOMPLETE_REASONS = frozenset(
    {
        "aborted",
        "canceled",
        "cancelled",
        "content_filter",
        "failed",
        "incomplete",
        "length",
        "max_output_tokens",
        "max_tokens",
        "model_context_window_exceeded",
        "pause_turn",
        "refusal",
        "timed_out",
        "timeout",
    }
)
_TEXT_ONLY_REASONS = frozenset({"stop", "end_turn", "stop_sequence"})
_TOOL_REASONS = frozenset({"tool_calls", "tool_use", "function_call"})
# dialect -> (label in the message, reasons proving a tool step, reasons proving a text step)
_DIALECT_PROOF: Mapping[str, tuple[str, frozenset[str], frozenset[str]]] = {
    "chat": ("Chat finish reason", frozenset({"tool_calls", "function_call"}), frozenset({"stop"})),
    "messages": ("Messages stop reason", frozenset({"tool_use"}), frozenset({"end_turn", "stop_sequence"})),
}
_FLOAT_FIELDS = frozenset({"started_at", "completed_at", "duration_ms", "latency_ttft_ms"})
_CALL_HEAD = tuple(name for name in MODEL_CALL_FIELDS if name not in ("response_metadata", "token_stats"))


def _finish_reason(reason: str, is_tool_step: bool, dialect: Any, path: str) -> None:
    normalised = reason.strip().lower()
    if normalised in _INCOMPLETE_REASONS:
        raise AtifExportError(f"{path}: finish reason {reason!r} indicates an incomplete model response")
    proof = _DIALECT_PROOF.get(dialect) if isinstance(dialect, str) else None
    if proof is not None:
        label, tool_reasons, text_reasons = proof
        if normalised not in (tool_reasons if is_tool_step else text_reasons):
            raise AtifExportError(f"{path}: {label} {reason!r} does not prove a completed response")
    if is_tool_step and normalised in _TEXT_ONLY_REASONS:
        raise AtifExportError(f"{path}: finish reason {reason!r} contradicts the captured tool calls")
    if not is_tool_step and normalised in _TOOL_REASONS:
        raise AtifExportError(f"{path}: finish reason {reason!r} contradicts the captured text-only output")


def check_completion(call: Mapping[str, Any], is_tool_step: bool, path: str) -> None:
    """Refuse a call whose metadata does not prove a completed response of the step's kind."""
    meta = call.get("response_metadata", {})
    status = meta.get("response_status")
    if status is not None and status != "completed":
        raise AtifExportError(f"{path}: model call is {status!r}, not completed")
    if meta.get("error_category") is not None:
        raise AtifExportError(f"{path}: model call contains provider error evidence")
    code = meta.get("status_code")
    if code is not None and not 200 <= code <= 299:
        raise AtifExportError(f"{path}: model call returned non-success status {code}")
    model = meta.get("model")
    if model is not None and not model.strip():
        raise AtifExportError(f"{path}.model_calls[0].model: cannot be blank")
    reason = meta.get("finish_reason")
    if reason is not None:
        if not reason.strip():
            raise AtifExportError(f"{path}.model_calls[0].finish_reason: cannot be blank")
        _finish_reason(reason, is_tool_step, meta.get("dialect"), path)


def _token_stats(call: Mapping[str, Any]) -> dict[str, int]:
    stats = call.get("token_stats", {})
    return {name: stats[name] for name in TOKEN_FIELDS if stats.get(name) is not None}


def check_tokens(call: Mapping[str, Any], path: str) -> None:
    """Refuse token counts that contradict each other (parts above totals, subsets above sets)."""
    stats = _token_stats(call)
    total = stats.get("total_tokens")
    if total is not None:
        for name in ("prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens"):
            if stats.get(name, 0) > total:
                raise AtifExportError(f"{path}: model-call {name} exceeds total_tokens")
        if stats.get("prompt_tokens", 0) + stats.get("completion_tokens", 0) > total:
            raise AtifExportError(f"{path}: model-call prompt_tokens plus completion_tokens exceeds total_tokens")
    if "cached_tokens" in stats and "prompt_tokens" in stats and stats["cached_tokens"] > stats["prompt_tokens"]:
        raise AtifExportError(f"{path}: model-call cached_tokens exceeds prompt_tokens; cached tokens must be a subset")
    if "reasoning_tokens" in stats and "completion_tokens" in stats and stats["reasoning_tokens"] > stats["completion_tokens"]:
        raise AtifExportError(f"{path}: model-call reasoning_tokens exceeds completion_tokens; reasoning tokens must be a subset")


def step_metrics(call: Mapping[str, Any]) -> dict[str, Any] | None:
    """ATIF step metrics from the token stats; ``None`` when no count is known (never invented)."""
    stats = _token_stats(call)
    if not stats:
        return None
    metrics: dict[str, Any] = {name: stats[name] for name in ("prompt_tokens", "completion_tokens", "cached_tokens") if name in stats}
    extra = {name: stats[name] for name in ("reasoning_tokens", "total_tokens") if name in stats}
    if extra:
        metrics["extra"] = extra
    return metrics


def iso_timestamp(epoch_seconds: float, path: str) -> str:
    """UTC ISO 8601 with ``Z``, microseconds only when non-zero (Python's ``isoformat``)."""
    try:
        moment = datetime.fromtimestamp(epoch_seconds, tz=UTC)
    except (OverflowError, ValueError, OSError):
        raise AtifExportError(f"{path}.timestamp: cannot be represented as an ISO 8601 timestamp") from None
    return moment.isoformat().replace("+00:00", "Z")


def _plain(name: str, value: Any) -> Any:
    return float(value) if name in _FLOAT_FIELDS else value


def dump_model_call(call: Mapping[str, Any]) -> dict[str, Any]:
    """The captured call as the model dumps it: declaration order, nulls dropped, floats as floats."""
    dumped = {name: _plain(name, call[name]) for name in _CALL_HEAD if call.get(name) is not None}
    meta = call.get("response_metadata", {})
    metadata: dict[str, Any] = {}
    for name in RESPONSE_METADATA_FIELDS:
        value = meta.get(name)
        if value is not None:
            metadata[name] = {"type": value["type"], "name": value["name"]} if name == "model_ref" else _plain(name, value)
    dumped["response_metadata"] = metadata
    dumped["token_stats"] = _token_stats(call)
    return dumped
