"""Responses conversation items as 0.7.0 classifies and normalises them.

The export must decide exactly like Gym's Responses input union which model an item is (an
"easy" message and an input message differ only by whether ``status`` accompanies list
content), because error texts name the model and the turn copies must match the conversation
after the same normalisation: unknown keys dropped, defaults filled in, nulls dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["UNSUPPORTED_ITEM_CLASS", "InvalidItem", "Item", "parse_item", "parse_items", "strict_float"]


class InvalidItem(ValueError):
    """The value does not parse as a Responses input item (0.7.0: a pydantic validation error)."""


@dataclass(frozen=True, slots=True)
class Item:
    """A parsed item: its model ``kind`` and its normalised dump ``data``."""

    kind: str
    data: dict[str, Any]


# 0.7.0 model class names, for the only kinds an agent group can stumble on (§5.3 (c)).
UNSUPPORTED_ITEM_CLASS: Mapping[str, str] = {
    "easy_message": "NeMoGymEasyInputMessage",
    "input_message": "NeMoGymMessage",
    "function_call_output": "NeMoGymFunctionCallOutput",
}

Convert = Callable[[Any], Any]
PartConvert = Callable[[dict[str, Any]], dict[str, Any]]
_REQUIRED = object()
_STATUSES = ("in_progress", "completed", "incomplete")


def _fail() -> Any:
    raise InvalidItem


def _str(value: Any) -> str:
    return value if type(value) is str else _fail()


def strict_float(value: Any) -> bool:
    """A strict float field: a float, or an int a float can hold (pydantic refuses a wider one), never a bool."""
    return type(value) is float or (type(value) is int and -_FLOAT_MAX <= value <= _FLOAT_MAX)


# The largest int that converts to a finite float: the largest float plus just under half its last step.
_FLOAT_MAX = 2**1024 - 2**970 - 1


def _optional(convert: Convert) -> Convert:
    return lambda value: None if value is None else convert(value)


def _literal(*allowed: str) -> Convert:
    return lambda value: value if type(value) is str and value in allowed else _fail()


def _list_of(convert: Convert) -> Convert:
    return lambda value: [convert(x) for x in value] if type(value) is list else _fail()


def _pick(obj: Mapping[str, Any], spec: Mapping[str, tuple[Convert, Any]]) -> dict[str, Any]:
    """Validate the declared fields (others are ignored, as the models do) and drop nulls."""
    out: dict[str, Any] = {}
    for key, (convert, default) in spec.items():
        if key in obj:
            value = convert(obj[key])
        elif default is _REQUIRED:
            raise InvalidItem
        else:
            value = default
        if value is not None:
            out[key] = value
    return out


def _parts(specs: Mapping[str, Mapping[str, tuple[Convert, Any]] | PartConvert]) -> Convert:
    """A content-part converter over the allowed part types (a field spec, or a converter of its own)."""

    def convert(part: Any) -> dict[str, Any]:
        if type(part) is not dict or type(part.get("type")) is not str or part["type"] not in specs:
            raise InvalidItem
        spec = specs[part["type"]]
        if callable(spec):
            return spec(part)
        return {"type": part["type"], **_pick(part, spec)}

    return _list_of(convert)


_OPT_STR = (_optional(_str), None)
_STR_IF_GIVEN = (_str, None)
_TEXT = {"text": (_str, _REQUIRED)}
_IMAGE_DETAIL = _literal("low", "high", "auto", "original")
_FILE_DETAIL = (_literal("low", "high"), None)
# A message's parts and a tool output's parts are different SDK types: a message image needs its
# detail, a message file's data, URL and name are never null; a tool output's may all be null.
_IMAGE = {"detail": (_IMAGE_DETAIL, _REQUIRED), "file_id": _OPT_STR, "image_url": _OPT_STR}
_FILE = {"detail": _FILE_DETAIL, "file_data": _STR_IF_GIVEN, "file_id": _OPT_STR, "file_url": _STR_IF_GIVEN, "filename": _STR_IF_GIVEN}
_TOOL_IMAGE = {"detail": (_optional(_IMAGE_DETAIL), None), "file_id": _OPT_STR, "image_url": _OPT_STR}
_TOOL_FILE = {"detail": _FILE_DETAIL, "file_data": _OPT_STR, "file_id": _OPT_STR, "file_url": _OPT_STR, "filename": _OPT_STR}
_TOOL_OUTPUT_PARTS = _parts({"input_text": _TEXT, "input_image": _TOOL_IMAGE, "input_file": _TOOL_FILE})


def _video(part: dict[str, Any]) -> dict[str, Any]:
    """Gym's video part, kept as given: exactly one of ``video_url`` and ``video``, a string or an
    object, whose URL (the string, or the object's ``url``) is a non-blank string."""
    sources = [part[key] for key in ("video_url", "video") if key in part]
    if len(sources) != 1 or not isinstance(sources[0], (str, dict)):
        raise InvalidItem
    url = sources[0].get("url") if isinstance(sources[0], dict) else sources[0]
    if not isinstance(url, str) or not url.strip():
        raise InvalidItem
    return {k: v for k, v in part.items() if v is not None}


_INPUT_PARTS = _parts({"input_text": _TEXT, "input_image": _IMAGE, "input_file": _FILE, "input_video": _video})
# The SDK's annotation types: their required fields, strictly typed (a bool is no int).
_ANNOTATION_FIELDS: Mapping[str, Mapping[str, type]] = {
    "file_citation": {"file_id": str, "filename": str, "index": int},
    "url_citation": {"end_index": int, "start_index": int, "title": str, "url": str},
    "container_file_citation": {"container_id": str, "end_index": int, "file_id": str, "filename": str, "start_index": int},
    "file_path": {"file_id": str, "index": int},
}


def _annotation(value: Any) -> Any:
    """One ``output_text`` annotation, kept as given once it is one of the SDK's types."""
    fields = _ANNOTATION_FIELDS.get(value["type"]) if type(value) is dict and type(value.get("type")) is str else None
    if fields is None or any(type(value.get(key)) is not kind for key, kind in fields.items()):
        raise InvalidItem
    return value


def _logprob(value: Any) -> Any:
    """One ``output_text`` log probability, kept as given: its own fields are checked when the
    record is parsed; the entries of ``bytes`` and ``top_logprobs`` only when 0.7.0 reads them
    (which then fails its whole export: we refuse the row instead, see DIFFERENCES.md)."""
    if (
        type(value) is not dict
        or type(value.get("token")) is not str
        or not strict_float(value.get("logprob"))
        or type(value.get("bytes")) is not list
        or type(value.get("top_logprobs")) is not list
    ):
        raise InvalidItem
    return value


_OUTPUT_PARTS = _parts(
    {
        "output_text": {
            "annotations": (_list_of(_annotation), _REQUIRED),
            "text": (_str, _REQUIRED),
            "logprobs": (_optional(_list_of(_logprob)), None),
        },
        "refusal": {"refusal": (_str, _REQUIRED)},
    }
)


def _text_or(parts: Convert) -> Convert:
    return lambda value: value if type(value) is str else parts(value)


_OPT_STATUS = (_optional(_literal(*_STATUSES)), None)
_MESSAGE_TYPE = (_literal("message"), None)
_SPECS: Mapping[str, Mapping[str, tuple[Convert, Any]]] = {
    "easy_message": {
        "content": (_text_or(_INPUT_PARTS), _REQUIRED),
        "role": (_literal("user", "assistant", "system", "developer"), _REQUIRED),
        "type": _MESSAGE_TYPE,
    },
    "input_message": {
        "content": (_INPUT_PARTS, _REQUIRED),
        "role": (_literal("user", "system", "developer"), _REQUIRED),
        "status": (_literal(*_STATUSES), "completed"),
        "type": _MESSAGE_TYPE,
    },
    "output_message": {
        "id": (_str, _REQUIRED),
        "content": (_OUTPUT_PARTS, _REQUIRED),
        "role": (_literal("assistant"), "assistant"),
        "status": (_literal(*_STATUSES), "completed"),
        "type": (_literal("message"), _REQUIRED),
    },
    "function_call": {
        "arguments": (_str, _REQUIRED),
        "call_id": (_str, _REQUIRED),
        "name": (_str, _REQUIRED),
        "type": (_literal("function_call"), _REQUIRED),
        "id": _OPT_STR,
        "status": _OPT_STATUS,
        "namespace": _OPT_STR,
    },
    "function_call_output": {
        "call_id": (_str, _REQUIRED),
        "output": (_text_or(_TOOL_OUTPUT_PARTS), _REQUIRED),
        "type": (_literal("function_call_output"), _REQUIRED),
        "id": _OPT_STR,
        "status": _OPT_STATUS,
    },
    "reasoning": {
        "id": (_str, _REQUIRED),
        "summary": (_parts({"summary_text": _TEXT}), _REQUIRED),
        "type": (_literal("reasoning"), _REQUIRED),
        "encrypted_content": _OPT_STR,
        "content": (_optional(_parts({"reasoning_text": _TEXT})), None),
    },
}


def _message_kind(obj: Mapping[str, Any]) -> str:
    """Gym's discriminator for ``type: message`` (only the first part decides for assistants).

    Any role but a source role is looked at as an assistant's: a message without ``role`` whose
    content opens with an output part is an output message, whose role defaults to assistant;
    any other role then fails the model's role check.
    """
    role, content = obj.get("role"), obj.get("content")
    if role in ("user", "system", "developer"):
        if type(content) is list and obj.get("status") in _STATUSES:
            return "input_message"
        return "easy_message"
    first = content[0] if type(content) is list and content else None
    if type(first) is dict and first.get("type") in ("output_text", "refusal"):
        return "output_message"
    if content == [] and type(obj.get("id")) is str:
        return "output_message"
    return "easy_message"


def parse_item(obj: Any) -> Item:
    """Classify and normalise one conversation item, or raise ``InvalidItem``."""
    if type(obj) is not dict:
        raise InvalidItem
    item_type = obj.get("type")
    kind = _message_kind(obj) if item_type == "message" else item_type
    if type(kind) is not str or kind not in _SPECS:
        raise InvalidItem
    return Item(kind, _pick(obj, _SPECS[kind]))


def parse_items(value: Any) -> list[Item]:
    """Parse a list of conversation items, or raise ``InvalidItem`` (a non-list fails too)."""
    if type(value) is not list:
        raise InvalidItem
    return [parse_item(item) for item in value]
