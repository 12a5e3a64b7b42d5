"""The model-call record 0.7.0 builds from one captured exchange (spec: collection.md §4.1).

Validation is pydantic's default *lax* mode on purpose: 0.7.0 relies on it (``"200"`` becomes
``200``, ``"inf"`` becomes ``inf``, a non-string ``model_call_id`` is refused), and a line whose
record does not validate counts as unreadable.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SkipValidation

__all__ = ["PAYLOAD_KEYS", "ModelCallRecord", "ModelRef"]

# Keys of the raw exchange bodies; they are dropped from persisted calls (§5.3, §8.10).
PAYLOAD_KEYS: tuple[str, ...] = ("request", "response", "request_raw", "response_raw")


class ModelRef(BaseModel):
    """Which Gym model server answered; extra keys are dropped, other shapes are refused."""

    type: Literal["responses_api_models"]
    name: str


class ModelCallRecord(BaseModel):
    """One readable exchange, with tokens, tool calls and reasoning derived from its body.

    Field order is the serialisation order of ``ng_model_call_capture.calls``. The payload
    fields skip validation: the builder only ever passes objects/strings/None there, and
    validating a multi-megabyte request would copy it for nothing.
    """

    model_config = ConfigDict(frozen=True)

    model_call_id: str | None = None
    response_id: str | None = None
    client_session_id: str | None = None
    call_index: int
    model_ref: ModelRef | None = None
    model: str | None = None
    dialect: str | None = None
    status_code: int | None = None
    response_status: str | None = None
    finish_reason: str | None = None
    upstream_attempted: bool | None = None
    response_source: Literal["upstream", "local"] | None = None
    upstream_status_code: int | None = None
    local_response_reason: str | None = None
    started_at: float | None = None
    completed_at: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    tokens_reasoning: int | None = None
    tokens_total: int | None = None
    request: SkipValidation[dict[str, Any] | None] = None
    response: SkipValidation[dict[str, Any] | None] = None
    request_raw: SkipValidation[str | None] = None
    response_raw: SkipValidation[str | None] = None
    tool_calls: SkipValidation[list[dict[str, Any]]] = []
    reasoning_content: str | None = None
    cache_hit: bool | None = None
    cached_tokens: int | None = None
    cache_creation_tokens: int | None = None
    error_category: str | None = None
    latency_total_ms: float | None = None
    latency_ttft_ms: float | None = None

    def model_ref_key(self) -> tuple[str, str] | None:
        """``(type, name)`` of the model server, the form refs are compared in."""
        return None if self.model_ref is None else (self.model_ref.type, self.model_ref.name)

    def as_call(self, *, include_payloads: bool) -> dict[str, Any]:
        """The python-mode dump persisted in ``calls``, without copying the payloads.

        Equal to ``model_dump()`` (minus the payload keys when excluded); built by hand so
        large request/response bodies are shared, not deep-copied. A validated model's
        ``__dict__`` holds exactly its field values, in declaration order: one C-level copy of
        it costs a thirtieth of a Python loop over the fields.
        """
        call = dict(self.__dict__)
        if self.model_ref is not None:
            call["model_ref"] = {"type": self.model_ref.type, "name": self.model_ref.name}
        if not include_payloads:
            for name in PAYLOAD_KEYS:
                del call[name]
        return call
