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

import json
from collections.abc import Iterator
from typing import Any

import orjson

__all__ = ["dump_row", "dumps", "loads_exact", "orjson_line"]

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
