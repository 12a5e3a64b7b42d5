"""Conversation items of an agent invocation, normalised as 0.7.0 re-emits them (spec: §8.9).

0.7.0 validates every ``conversation`` item against NeMo Gym's Responses input-item union and
writes back its JSON dump: defaults and nulls are filled in, unknown keys dropped and fields put
in the model's order. :data:`ConversationItem` reproduces that for the item kinds agents emit
(messages, function calls and outputs, reasoning, the permissive fallback); an item that picks
a model and then fails it makes the whole observation bundle invalid, as in 0.7.0.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Tag

__all__ = ["ConversationItem", "item_kind"]

_INPUT_ROLES = frozenset({"user", "system", "developer"})
_MESSAGE_ROLES = _INPUT_ROLES | {"assistant"}
_ITEM_STATUSES = frozenset({"in_progress", "completed", "incomplete"})
_OUTPUT_PART_TYPES = frozenset({"output_text", "refusal"})
_TRAINING_KEYS = ("prompt_token_ids", "generation_token_ids", "generation_log_probs")

Status = Literal["in_progress", "completed", "incomplete"]


class _Item(BaseModel):
    """Unknown keys are dropped, as the SDK-derived models do on dump."""

    model_config = ConfigDict(extra="ignore")


class InputText(_Item):
    text: str
    type: Literal["input_text"]


class InputImage(_Item):
    detail: Literal["low", "high", "auto"]
    type: Literal["input_image"]
    file_id: str | None = None
    image_url: str | None = None


class InputFile(_Item):
    type: Literal["input_file"]
    file_data: str | None = None
    file_id: str | None = None
    file_url: str | None = None
    filename: str | None = None


InputPart = Annotated[InputText | InputImage | InputFile, Discriminator("type")]


class OutputText(_Item):
    annotations: list[dict[str, Any]]
    text: str
    type: Literal["output_text"]
    logprobs: list[dict[str, Any]] | None = None


class Refusal(_Item):
    refusal: str
    type: Literal["refusal"]


OutputPart = Annotated[OutputText | Refusal, Discriminator("type")]


class SummaryText(_Item):
    text: str
    type: Literal["summary_text"]


class ReasoningText(_Item):
    text: str
    type: Literal["reasoning_text"]


class EasyMessage(_Item):
    content: str | list[InputPart]
    role: Literal["user", "assistant", "system", "developer"]
    type: Literal["message"] = "message"
    phase: Literal["commentary", "final_answer"] | None = None


class InputMessage(_Item):
    content: list[InputPart]
    role: Literal["user", "system", "developer"]
    status: Status | None = None
    type: Literal["message"] = "message"


class OutputMessage(_Item):
    id: str
    content: list[OutputPart]
    role: Literal["assistant"]
    status: Status = "completed"
    type: Literal["message"] = "message"
    phase: Literal["commentary", "final_answer"] | None = None


class FunctionCall(_Item):
    arguments: str
    call_id: str
    name: str
    type: Literal["function_call"]
    id: str | None = None
    status: Status | None = None
    namespace: str | None = None


class FunctionCallOutput(_Item):
    call_id: str
    output: str | list[InputPart]
    type: Literal["function_call_output"] = "function_call_output"
    id: str | None = None
    status: Status | None = None


class Reasoning(_Item):
    id: str
    summary: list[SummaryText]
    type: Literal["reasoning"] = "reasoning"
    encrypted_content: str | None = None
    content: list[ReasoningText] | None = None


class McpCall(_Item):
    id: str
    arguments: str
    name: str
    server_label: str
    type: Literal["mcp_call"] = "mcp_call"
    approval_request_id: str | None = None
    error: str | None = None
    output: str | None = None
    status: Literal["in_progress", "completed", "incomplete", "calling", "failed"] | None = None


class PermissiveItem(BaseModel):
    """The catch-all ``mcp_list_tools`` model: every field optional, unknown keys kept."""

    model_config = ConfigDict(extra="allow")

    id: str | None = None
    server_label: str | None = None
    tools: list[dict[str, Any]] = []
    type: Literal["mcp_list_tools"] = "mcp_list_tools"
    error: str | None = None


class _TrainingFields(BaseModel):
    """Token-level data a training rollout attaches; dumped before the item's own fields."""

    prompt_token_ids: list[int]
    generation_token_ids: list[int]
    generation_log_probs: list[float]
    routed_experts: Any = None


class EasyMessageForTraining(EasyMessage, _TrainingFields):
    pass


class InputMessageForTraining(InputMessage, _TrainingFields):
    pass


class OutputMessageForTraining(OutputMessage, _TrainingFields):
    pass


class FunctionCallForTraining(FunctionCall, _TrainingFields):
    pass


class ReasoningForTraining(Reasoning, _TrainingFields):
    pass


_TRAINING_VARIANTS = {
    "easy_message": "easy_message_for_training",
    "input_message": "input_message_for_training",
    "output_message": "output_message_for_training",
    "function_call": "function_call_for_training",
    "reasoning": "reasoning_for_training",
}


def _first_part_is_output(content: Any) -> bool:
    return (
        isinstance(content, list)
        and bool(content)
        and isinstance(content[0], dict)
        and content[0].get("type") in _OUTPUT_PART_TYPES
    )


def _typed_message_kind(item: dict[str, Any]) -> str:
    """``type == "message"``: input, output or easy message by role, content and status."""
    content = item.get("content")
    if item.get("role") in _INPUT_ROLES:
        if isinstance(content, list) and item.get("status") in _ITEM_STATUSES:
            return "input_message"
        return "easy_message"
    if _first_part_is_output(content) or (content == [] and isinstance(item.get("id"), str)):
        return "output_message"
    return "easy_message"


def _untyped_kind(item: dict[str, Any]) -> str:
    """An item without ``type``: guessed from its keys, with the permissive model last."""
    content = item.get("content")
    if item.get("role") in _MESSAGE_ROLES and isinstance(content, (str, list)):
        kind = _typed_message_kind(item)
        if kind == "output_message" and isinstance(item.get("id"), str):
            return kind
        if kind != "output_message" and not _first_part_is_output(content):
            return kind
    elif "role" not in item and isinstance(item.get("id"), str) and _first_part_is_output(content):
        return "output_message"
    if "arguments" in item and "name" in item:
        return "function_call" if "call_id" in item else "mcp_call"
    if isinstance(item.get("call_id"), str) and "output" in item:
        return "function_call_output"
    if isinstance(item.get("id"), str) and isinstance(item.get("summary"), list):
        return "reasoning"
    return "mcp_list_tools"


def item_kind(item: Any) -> str | None:
    """The union tag 0.7.0's discriminator picks for ``item`` (None: no model accepts it).

    Validated items (at dump time) are tagged by their model class.
    """
    if isinstance(item, BaseModel):
        return _TAGS.get(type(item))
    if not isinstance(item, dict):
        return None
    item_type = item.get("type")
    if item_type == "message":
        kind = _typed_message_kind(item)
    elif isinstance(item_type, str):
        kind = item_type
    else:
        kind = _untyped_kind(item)
    if kind in _TRAINING_VARIANTS and all(key in item for key in _TRAINING_KEYS):
        return _TRAINING_VARIANTS[kind]
    return kind


_MODELS: dict[str, type[BaseModel]] = {
    "easy_message": EasyMessage,
    "input_message": InputMessage,
    "output_message": OutputMessage,
    "function_call": FunctionCall,
    "function_call_output": FunctionCallOutput,
    "reasoning": Reasoning,
    "mcp_call": McpCall,
    "mcp_list_tools": PermissiveItem,
    "easy_message_for_training": EasyMessageForTraining,
    "input_message_for_training": InputMessageForTraining,
    "output_message_for_training": OutputMessageForTraining,
    "function_call_for_training": FunctionCallForTraining,
    "reasoning_for_training": ReasoningForTraining,
}
_TAGS = {model: tag for tag, model in _MODELS.items()}

ConversationItem = Annotated[
    Annotated[EasyMessage, Tag("easy_message")]
    | Annotated[InputMessage, Tag("input_message")]
    | Annotated[OutputMessage, Tag("output_message")]
    | Annotated[FunctionCall, Tag("function_call")]
    | Annotated[FunctionCallOutput, Tag("function_call_output")]
    | Annotated[Reasoning, Tag("reasoning")]
    | Annotated[McpCall, Tag("mcp_call")]
    | Annotated[PermissiveItem, Tag("mcp_list_tools")]
    | Annotated[EasyMessageForTraining, Tag("easy_message_for_training")]
    | Annotated[InputMessageForTraining, Tag("input_message_for_training")]
    | Annotated[OutputMessageForTraining, Tag("output_message_for_training")]
    | Annotated[FunctionCallForTraining, Tag("function_call_for_training")]
    | Annotated[ReasoningForTraining, Tag("reasoning_for_training")],
    Discriminator(item_kind),
]
"""One conversation item; validate inside a model and dump in JSON mode to normalise it."""
