"""JSON text the way Gym's writer (orjson) produces it, without its failure modes.

Gym persists with orjson: non-finite floats become ``null``, and nesting deeper than 255 levels
or an integer beyond 64 bits makes the write raise. We keep orjson's exact bytes wherever it can
write a value and fall back, for the subtrees it refuses, to an iterative writer that renders
leaves with orjson (so floats keep orjson's spelling), wide integers exactly and any depth
without recursion. No value is ever lost and no value can make a write raise.

This is the one home of JSON writing in the library: rows, health files, perf_summary and the
part encoding all go through :func:`dumps`.
"""

from __future__ import annotations

import functools
import json
import math
import typing
from collections.abc import Iterator
from typing import Any

import orjson
from pydantic import BaseModel

__all__ = ["decodes_to_itself", "dump_row", "dumps", "json_dump_decodes_to_itself", "loads_exact", "orjson_line"]

_INDENT = orjson.OPT_INDENT_2


def dumps(value: Any, *, indent: bool = False) -> bytes:
    """``orjson.dumps(value)`` (with ``OPT_INDENT_2`` when ``indent``), for every JSON value.

    Raises:
        TypeError: ``value`` holds something that is not a JSON value (never from parsed JSON).
    """
    try:
        return orjson.dumps(value, option=_INDENT if indent else 0)
    except orjson.JSONEncodeError:
        return b"".join(_pieces(value, indent))


def dump_row(row: Any) -> bytes:
    """One JSONL line (no trailing newline); value-equal to what orjson would have written."""
    return dumps(row)


def orjson_line(row: Any) -> bytes | None:
    """orjson's own rendering of ``row``, or None when only the fallback writer can write it.

    Such a line is strict JSON by construction: unique keys, no NaN/Infinity literals, floats
    in their shortest round-trip spelling, integers within 64 bits, valid UTF-8 without lone
    surrogates. Any reader that refuses lossy JSON therefore decodes it to exactly
    ``orjson.loads(line)``, which lets callers parse it once.
    """
    try:
        return orjson.dumps(row)
    except orjson.JSONEncodeError:
        return None


def decodes_to_itself(value: Any) -> bool:
    """Whether a value orjson has written decodes from that line to an equal value of the same types.

    orjson writes a non-finite float as ``null``, a tuple as an array, and a ``str`` or ``int``
    subclass (an enum) as its plain value; everything else that it writes reads back as it was.
    Knowing this lets a caller keep the value it wrote instead of parsing the line again.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is float:
            if not math.isfinite(item):
                return False
        elif not (kind is str or kind is int or kind is bool or item is None):
            return False
    return True


def json_dump_decodes_to_itself(model: BaseModel) -> bool:
    """``decodes_to_itself`` for ``model.model_dump(mode="json")``, read off the model instead of the dump.

    A JSON-mode dump already makes untyped (``Any``) content native and finite (tuples become
    lists, NaN becomes None); only a field typed ``float`` (or a list or dict of them) keeps a
    non-finite value. Walking the models and their typed containers costs a few hundred
    attribute reads where the dump itself holds every message of a long rollout.
    """
    stack = [model]
    while stack:
        current = stack.pop()
        fields = current.__dict__  # a pydantic model's field values
        for name in _typed_fields(type(current)):
            value = fields[name]
            kind = type(value)
            for item in value if kind is list or kind is tuple else value.values() if kind is dict else (value,):
                if isinstance(item, BaseModel):
                    stack.append(item)
                elif type(item) is float and not math.isfinite(item):
                    return False
    return True


@functools.cache
def _typed_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields of ``model`` whose type mentions ``float`` or a model: only these can hold either."""
    return tuple(name for name, field in model.model_fields.items() if _mentions_float_or_model(field.annotation))


def _mentions_float_or_model(annotation: Any) -> bool:
    if annotation is float or (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
        return True
    return any(_mentions_float_or_model(argument) for argument in typing.get_args(annotation))


def loads_exact(data: bytes) -> Any:
    """Parse JSON keeping integers of any width exact (orjson turns wide ones into floats)."""
    return json.loads(data)


def _leaf(value: Any) -> bytes:
    """A scalar orjson refused: a wide integer, or a string holding a lone surrogate."""
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return orjson.dumps(value)
    if isinstance(value, int):
        return str(value).encode()
    if isinstance(value, str):
        return json.dumps(value).encode()  # \\uXXXX escapes: valid JSON text for any code point
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def _pieces(value: Any, indent: bool) -> Iterator[bytes]:
    """The fallback writer: containers walked with an explicit stack, children tried with orjson first."""
    option = _INDENT if indent else 0
    # Each frame: (iterator over (key or None, child), closing bracket, depth, first-item flag holder)
    stack: list[tuple[Iterator[tuple[str | None, Any]], bytes, int, list[bool]]] = []

    def open_container(container: Any, depth: int) -> bytes:
        if isinstance(container, dict):
            items: Iterator[tuple[str | None, Any]] = iter(container.items())
            brackets = b"{}"
        else:
            items = ((None, child) for child in container)
            brackets = b"[]"
        if not container:
            return brackets
        stack.append((items, brackets[1:], depth, [True]))
        return brackets[:1]

    def render(child: Any, depth: int) -> bytes | None:
        """The child's bytes when orjson (or the leaf writer) can write it whole, else None."""
        if isinstance(child, (dict, list)):
            try:
                text = orjson.dumps(child, option=option)
            except orjson.JSONEncodeError:
                return None
            return text.replace(b"\n", b"\n" + b"  " * depth) if indent and depth else text
        try:
            return orjson.dumps(child)
        except orjson.JSONEncodeError:
            return _leaf(child)

    if not isinstance(value, (dict, list)):
        yield _leaf(value)
        return
    yield open_container(value, 0)
    while stack:
        items, closing, depth, first = stack[-1]
        item = next(items, _END)
        if item is _END:
            stack.pop()
            yield (b"\n" + b"  " * depth + closing) if indent else closing
            continue
        key, child = item
        separator = b"" if first[0] else b","
        first[0] = False
        pad = b"\n" + b"  " * (depth + 1) if indent else b""
        label = b"" if key is None else _key(key) + (b": " if indent else b":")
        yield separator + pad + label
        text = render(child, depth + 1)
        yield open_container(child, depth + 1) if text is None else text


def _key(key: Any) -> bytes:
    if not isinstance(key, str):
        raise TypeError("Dict key must be str")
    try:
        return orjson.dumps(key)
    except orjson.JSONEncodeError:
        return json.dumps(key).encode()


_END: Any = object()
