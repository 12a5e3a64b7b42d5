"""The normalised view of one canonical model call and the predicates health applies to it.

Health never reads raw capture records: it works on the canonical ``ng_trajectory.model_calls``
entries (already validated and re-dumped), reduced here to the few fields the checks use.
"""

from __future__ import annotations

from typing import Any, NamedTuple

FAILED_RESPONSE_STATUSES = frozenset({"failed", "error", "cancelled"})
RUNAWAY_FINISH_REASONS = frozenset({"length", "max_output_tokens", "max_tokens"})
CONTENT_KEYS = (
    "text",
    "content",
    "output_text",
    "answer",
    "refusal",
    "encrypted_content",
    "reasoning",
    "reasoning_content",
    "summary",
)
TOOL_CALL_TYPES = frozenset(
    {
        "function_call",
        "tool_call",
        "tool_use",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "file_search_call",
        "web_search_call",
        "computer_call",
        "image_generation_call",
        "code_interpreter_call",
        "local_shell_call",
        "custom_tool_call",
    }
)


class CallView(NamedTuple):
    """One canonical model call; ``position`` is its index in the (non-chronological) list.

    A named tuple: one is made for every call of every row, and a frozen dataclass's
    ``__init__`` (an ``object.__setattr__`` per field) cost several times as much.
    """

    position: int
    model_call_id: str | None
    started_at: float | None
    request: Any
    response: Any
    response_id: str | None
    model_ref: dict[str, Any] | None
    status_code: int | None
    response_status: str | None
    finish_reason: str | None
    error_category: str | None
    tokens_in: int | None
    tokens_out: int | None

    @classmethod
    def from_canonical(cls, position: int, call: dict[str, Any]) -> CallView:
        meta = call.get("response_metadata") or {}
        tokens = call.get("token_stats") or {}
        return cls(
            position=position,
            model_call_id=call.get("model_call_id"),
            started_at=call.get("started_at"),
            request=call.get("request"),
            response=call.get("response"),
            response_id=meta.get("response_id"),
            model_ref=meta.get("model_ref"),
            status_code=meta.get("status_code"),
            response_status=meta.get("response_status"),
            finish_reason=meta.get("finish_reason"),
            error_category=meta.get("error_category"),
            tokens_in=tokens.get("prompt_tokens"),
            tokens_out=tokens.get("completion_tokens"),
        )

    @property
    def failed(self) -> bool:
        """See :func:`call_failed`."""
        return call_failed(self.status_code, self.error_category, self.response_status)

    @property
    def successful(self) -> bool:
        """See :func:`call_successful`."""
        return call_successful(self.status_code, self.error_category, self.response_status)

    @property
    def identity(self) -> str | None:
        """The replay-statistics identity: by call id, else by response id (with its model); an
        empty id is no identity, as in 0.7.0 (which tests both ids for truth)."""
        if self.model_call_id:
            return f"call:{self.model_call_id}"
        if not self.response_id:
            return None
        if isinstance(self.model_ref, dict):
            return f"response:{self.model_ref.get('type')}:{self.model_ref.get('name')}:{self.response_id}"
        return f"response::{self.response_id}"

    @property
    def locator(self) -> dict[str, str]:
        """Where a finding about this call points: its call id, else response id, else position."""
        return {"call_id": str(self.model_call_id or self.response_id or self.position)}

    @property
    def runaway_finish(self) -> bool:
        return self.finish_reason in RUNAWAY_FINISH_REASONS


def call_failed(status_code: Any, error_category: Any, response_status: Any) -> bool:
    """An HTTP error, an error category, or a failed/errored/cancelled response status.

    0.7.0's ``nemo_gym/health/checks.py::_is_failed`` on a call's response metadata; a 200 with
    ``response_status: failed`` is failed. Values are read as found, so a row whose metadata has
    odd types (the capability matrix reads unvalidated rows) is judged without raising.
    """
    return (
        (_is_int(status_code) and status_code >= 400)
        or bool(error_category)
        or (isinstance(response_status, str) and response_status in FAILED_RESPONSE_STATUSES)
    )


def call_successful(status_code: Any, error_category: Any, response_status: Any) -> bool:
    """Not failed and a 2xx/3xx (or unknown) status: a status of 150 is neither.

    0.7.0's ``nemo_gym/health/checks.py::_is_successful``; the one definition of a successful
    model call, shared by the health checks and the capability matrix's token-count dimension.
    """
    if call_failed(status_code, error_category, response_status):
        return False
    return status_code is None or (_is_int(status_code) and 200 <= status_code < 400)


def token_count(value: Any) -> int:
    """A token count for sums: the value when it is a non-negative int, else 0."""
    return value if _is_int(value) and value >= 0 else 0


def nonempty(value: Any) -> bool:
    """Whether a message-like value carries any visible text, searched recursively."""
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, list):
        return any(nonempty(item) for item in value)
    if isinstance(value, dict):  # most of the keys are absent: no call for those
        return any(nonempty(value[key]) for key in CONTENT_KEYS if key in value)
    return False


def has_tool_call(value: Any) -> bool:
    """Whether a message-like value is, or contains, a tool call item."""
    if isinstance(value, list):
        return any(has_tool_call(item) for item in value)
    if isinstance(value, dict):
        return value.get("type") in TOOL_CALL_TYPES or bool(value.get("tool_calls"))
    return False


def response_has_content(response: Any) -> bool:
    """Whether a saved response kept any content (Responses, Messages or chat shapes).

    The chat-choice test runs first and unconditionally, as in 0.7.0, so a malformed choice
    (a truthy non-object ``message``) raises AttributeError even when ``output`` has content.
    """
    if not isinstance(response, dict):
        return False
    choice_content = _chat_choices_have_content(response.get("choices"))
    return nonempty(response.get("output_text")) or nonempty(response.get("content")) or nonempty(response.get("output")) or choice_content


def _chat_choices_have_content(choices: Any) -> bool:
    return any(
        nonempty(choice.get("text")) or nonempty((choice.get("message") or {}).get("content"))
        for choice in (choices if isinstance(choices, list) else ())
        if isinstance(choice, dict)
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
