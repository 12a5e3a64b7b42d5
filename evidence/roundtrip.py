"""Whether a value written as JSON reads back as itself: so a caller can keep the value it wrote.

orjson writes a non-finite float as ``null``, a tuple as an array, and a ``str`` or ``int``
subclass as its plain value; everything else it writes reads back unchanged. These checks tell
the collection (``evidence/collect.py``) when the line it wrote need not be parsed again, and
``leaves`` is the one walk over a parsed JSON value's scalars (the ATIF preflight uses it too).
"""

from __future__ import annotations

import functools
import math
import types
import typing
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

__all__ = ["decodes_to_itself", "json_dump_decodes_to_itself", "leaves"]


def decodes_to_itself(value: Any) -> bool:
    """Whether a value orjson has written decodes from that line to an equal value of the same types.

    orjson writes a non-finite float as ``null``, a tuple as an array, and a ``str`` or ``int``
    subclass (an enum) as its plain value; everything else that it writes reads back as it was.
    Knowing this lets a caller keep the value it wrote instead of parsing the line again.
    """
    for item in leaves(value):
        kind = type(item)
        if kind is float:
            if not math.isfinite(item):
                return False
        elif not (kind is str or kind is int or kind is bool or item is None):
            return False
    return True


def leaves(value: Any) -> Iterator[Any]:
    """Every value inside a parsed JSON value that is neither an object nor an array (any depth, no recursion)."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        else:
            yield item


def json_dump_decodes_to_itself(model: BaseModel) -> bool:
    """``decodes_to_itself`` for ``model.model_dump(mode="json")``, read off the model instead of the dump.

    A JSON-mode dump already makes untyped (``Any``) content native and finite (tuples become
    lists, NaN becomes None); only a field typed ``float``, or typed containers of them at any
    depth, keeps a non-finite value. Walking the models and their typed containers costs a few hundred
    attribute reads where the dump itself holds every message of a long rollout.
    """
    stack: list[Any] = [model]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is float:
            if not math.isfinite(item):
                return False
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif kind is dict:
            stack.extend(item.values())
        elif isinstance(item, BaseModel):
            scalars, containers = _float_fields(type(item))
            fields = item.__dict__  # a pydantic model's field values
            # Most typed values are plain floats, checked here: a push and a pop would cost more.
            for name in scalars:
                value = fields[name]
                if type(value) is float and not math.isfinite(value):
                    return False
            if containers:
                stack.extend([fields[name] for name in containers])
    return True


@functools.cache
def _float_fields(model: type[BaseModel]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The fields of ``model`` the walk looks into: ``(typed float or None, the others)``.

    Only a field whose type mentions ``float`` or a model is typed (the rest is untyped content,
    native and finite in the dump), and of those only the ones that can hold a float at all: a
    model made of strings and integers (a call ref, a gap, most conversation items) is skipped.
    """
    fields = [
        (name, field.annotation)
        for name, field in model.model_fields.items()
        if _mentions_float_or_model(field.annotation) and _holds_float(field.annotation, (model,))
    ]
    return (
        tuple(name for name, annotation in fields if _is_float_or_none(annotation)),
        tuple(name for name, annotation in fields if not _is_float_or_none(annotation)),
    )


def _mentions_float_or_model(annotation: Any) -> bool:
    if annotation is float or (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
        return True
    return any(_mentions_float_or_model(argument) for argument in typing.get_args(annotation))


_FLOAT_FREE: tuple[Any, ...] = (str, int, bool, type(None))


def _holds_float(annotation: Any, within: tuple[type[BaseModel], ...]) -> bool:
    """Whether the walk can meet a float in a value of this type (values are what their types say).

    A model holds one through a field the walk looks into; ``within``: the models already being
    looked into, so a recursive model ends the search. A type not known to be free of floats
    (``Any``, a bare container, a class of its own) counts as holding one.
    """
    if annotation in _FLOAT_FREE or typing.get_origin(annotation) is typing.Literal:
        return False
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation not in within and any(
            _holds_float(field.annotation, (*within, annotation))
            for field in annotation.model_fields.values()
            if _mentions_float_or_model(field.annotation)
        )
    if typing.is_typeddict(annotation):
        return any(_holds_float(hint, within) for hint in typing.get_type_hints(annotation).values())
    arguments = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Annotated:
        arguments = arguments[:1]  # the rest is metadata (constraints, tags)
    return any(_holds_float(argument, within) for argument in arguments) if arguments else True


def _is_float_or_none(annotation: Any) -> bool:
    """``float``, optional or not, constraints aside: the field holds a float or None."""
    if annotation is float or annotation is type(None):
        return True
    if typing.get_origin(annotation) is typing.Annotated:
        return _is_float_or_none(typing.get_args(annotation)[0])
    return typing.get_origin(annotation) in (typing.Union, types.UnionType) and all(
        _is_float_or_none(argument) for argument in typing.get_args(annotation)
    )
