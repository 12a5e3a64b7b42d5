"""Conversation items of an agent invocation, normalised as 0.7.0 re-emits them (spec: §8.9).

0.7.0 validates every ``conversation`` item against NeMo Gym's Responses input-item union and
writes back its JSON dump, fields in the model's order. What happens to keys depends on where a
model comes from: NeMo Gym's own message, function-call and reasoning models (here) fill in
defaults and drop unknown keys; the SDK-derived tool-call items (``response_items``) and the
reasoning parts keep unknown keys; request-side content parts add nothing
(``content_parts``). Token metadata is all or nothing on every item. An item that picks a model
and then fails it makes the whole observation bundle (or producer trajectory) invalid, as in
0.7.0. Not reproduced: ``tool_search_output`` and ``additional_tools`` (their tool-definition
unions), which are refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Tag

from evidence.models.content_parts import (
    InputPart,
    OutputPart,
    ReasoningText,
    SummaryText,
    ToolOutputPart,
)
from evidence.models.response_items import RESPONSE_ITEM_MODELS

__all__ = ["ConversationItem", "item_kind"]

_INPUT_ROLES = frozenset({"user", "system", "developer"})
_MESSAGE_ROLES = _INPUT_ROLES | {"assistant"}
_ITEM_STATUSES = frozenset({"in_progress", "completed", "incomplete"})
_OUTPUT_PART_TYPES = frozenset({"output_text", "refusal"})
_TRAINING_KEYS = ("prompt_token_ids", "generation_token_ids", "generation_log_probs")
_TRAINING_KEY_SET = frozenset(_TRAINING_KEYS)
_TOKEN_METADATA_KEYS = _TRAINING_KEY_SET | {"routed_experts"}

Status = Literal["in_progress", "completed", "incomplete"]


class _Item(BaseModel):
    """NeMo Gym's own item models: unknown keys are dropped on dump."""

    model_config = ConfigDict(extra="ignore")


class EasyMessage(_Item):
    content: str | list[InputPart]
    role: Literal["user", "assistant", "system", "developer"]
    type: Literal["message"] = "message"
    phase: Literal["commentary", "final_answer"] | None = None


class InputMessage(_Item):
    content: list[InputPart]
    role: Literal["user", "system", "developer"]
    status: Status = "completed"
    type: Literal["message"] = "message"


class OutputMessage(_Item):
    id: str
    content: list[OutputPart]
    role: Literal["assistant"] = "assistant"
    status: Status = "completed"
    type: Literal["message"] = "message"
    phase: Literal["commentary", "final_answer"] | None = None


class FunctionCall(_Item):
    arguments: str
    call_id: str
    name: str
    type: Literal["function_call"] = "function_call"
    id: str | None = None
    status: Status | None = None
    namespace: str | None = None


class FunctionCallOutput(_Item):
    call_id: str
    output: str | list[ToolOutputPart]
    type: Literal["function_call_output"] = "function_call_output"
    id: str | None = None
    status: Status | None = None


class Reasoning(_Item):
    id: str
    summary: list[SummaryText]
    type: Literal["reasoning"] = "reasoning"
    encrypted_content: str | None = None
    content: list[ReasoningText] | None = None


class _TrainingFields(BaseModel):
    """Token-level data a training rollout attaches; dumped before the item's own fields."""

    prompt_token_ids: list[int]
    generation_token_ids: list[int]
    generation_log_probs: list[float]
    routed_experts: str | list[list[list[int]]] | None = None


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
    """Whether list content opens with an output part (a typeless part with ``refusal`` counts)."""
    if not isinstance(content, list) or not content or not isinstance(content[0], dict):
        return False
    first = content[0]
    return (first.get("type") or ("refusal" if "refusal" in first else None)) in _OUTPUT_PART_TYPES


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
        if kind == "output_message":
            return kind if isinstance(item.get("id"), str) else "mcp_list_tools"
        return "mcp_list_tools" if _first_part_is_output(content) else kind
    if "role" not in item and isinstance(item.get("id"), str) and (content == [] or _first_part_is_output(content)):
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

    Validated items (at dump time) are tagged by their model class: looked up first, as one
    dict read, where ``isinstance(item, BaseModel)`` goes through the model metaclass's check.
    """
    tag = _TAGS.get(type(item))
    if tag is not None:
        return tag
    if not isinstance(item, dict):
        return None  # another model's instance, or no object at all
    item_type = item.get("type")
    if item_type == "message":
        kind = _typed_message_kind(item)
    elif isinstance(item_type, str):
        kind = item_type
    elif item_type is None:
        kind = _untyped_kind(item)
    else:
        return None
    if kind in _TRAINING_VARIANTS and item.keys() >= _TRAINING_KEY_SET:
        return _TRAINING_VARIANTS[kind]
    return kind


def _token_metadata_all_or_nothing(item: Any) -> Any:
    """Refuse an item with only part of the token metadata (``routed_experts`` alone counts).

    Checked before the item's model is chosen, on every item kind: a partial set would
    otherwise pass as a plain item and silently lose its training data.
    """
    if not isinstance(item, dict) or item.keys().isdisjoint(_TOKEN_METADATA_KEYS):  # most items hold none
        return item
    present = [key for key in (*_TRAINING_KEYS, "routed_experts") if key in item]
    missing = sorted(set(_TRAINING_KEYS) - set(present))
    if missing:
        raise ValueError(f"Token metadata must include all required fields; missing: {', '.join(missing)}")
    _TrainingFields.model_validate({key: item[key] for key in present})
    return item


_MODELS: dict[str, type[BaseModel]] = {
    "easy_message": EasyMessage,
    "input_message": InputMessage,
    "output_message": OutputMessage,
    "function_call": FunctionCall,
    "function_call_output": FunctionCallOutput,
    "reasoning": Reasoning,
    **RESPONSE_ITEM_MODELS,
    "easy_message_for_training": EasyMessageForTraining,
    "input_message_for_training": InputMessageForTraining,
    "output_message_for_training": OutputMessageForTraining,
    "function_call_for_training": FunctionCallForTraining,
    "reasoning_for_training": ReasoningForTraining,
}
_TAGS = {model: tag for tag, model in _MODELS.items()}

if TYPE_CHECKING:
    # A union built from the table at run time is no static type; statically an item is one of
    # the table's models, each a BaseModel.
    ConversationItem: TypeAlias = BaseModel
else:
    ConversationItem = Annotated[
        Union[*(Annotated[model, Tag(tag)] for tag, model in _MODELS.items())],
        Discriminator(item_kind),
        BeforeValidator(_token_metadata_all_or_nothing),
    ]
"""One conversation item; validate inside a model and dump in JSON mode to normalise it."""
