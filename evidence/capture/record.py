"""One captured exchange (a parsed capture line) to a :class:`ModelCallRecord` (spec: §4.1)."""

from __future__ import annotations

from typing import Any

from evidence.capture.shapes import tool_calls_and_reasoning
from evidence.capture.tokens import token_fields
from evidence.models.capture import ModelCallRecord

__all__ = ["build_record"]

# Exchange keys copied as-is and left to the record's lax validation.
_COPIED_KEYS = (
    "model_call_id",
    "dialect",
    "status_code",
    "upstream_attempted",
    "response_source",
    "upstream_status_code",
    "local_response_reason",
    "started_at",
    "completed_at",
    "error_category",
    "model_ref",
)


def _string_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _finish_reason(response: dict[str, Any]) -> str | None:
    """The first string among the Anthropic, Chat and Responses stop signals."""
    candidates = [response.get("stop_reason")]
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        candidates.append(choices[0].get("finish_reason"))
    details = response.get("incomplete_details")
    if isinstance(details, dict):
        candidates.append(details.get("reason"))
    return next((value for value in candidates if isinstance(value, str)), None)


def build_record(exchange: dict[str, Any], call_index: int) -> ModelCallRecord:
    """Derive and validate the record of one exchange.

    Raises:
        pydantic.ValidationError, TypeError: the exchange is unusable (counted as unreadable).
    """
    request = exchange.get("request")
    response = exchange.get("response")
    request = request if isinstance(request, dict) else None
    response = response if isinstance(response, dict) else None
    body = response or {}
    model = body.get("model") or (request or {}).get("model")
    tool_calls, reasoning = tool_calls_and_reasoning(body)
    fields: dict[str, Any] = {key: exchange.get(key) for key in _COPIED_KEYS}
    fields.update(
        response_id=_string_or_none(body.get("id")),
        client_session_id=_string_or_none(exchange.get("client_session_id")),
        call_index=call_index,
        model=_string_or_none(model),
        response_status=_string_or_none(body.get("status")),
        finish_reason=_finish_reason(body),
        request=request,
        response=response,
        request_raw=_string_or_none(exchange.get("request_raw")),
        response_raw=_string_or_none(exchange.get("response_raw")),
        tool_calls=tool_calls,
        reasoning_content=reasoning,
        latency_total_ms=exchange.get("latency_ms"),
        latency_ttft_ms=exchange.get("latency_ttft_ms"),
        **token_fields(body),
    )
    return ModelCallRecord.model_validate(fields)
