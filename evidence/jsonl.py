"""JSON text the way Gym's writer (orjson) produces it, without its failure modes.

Gym persists with orjson: non-finite floats become ``null``, and nesting deeper than 255 levels
or an integer beyond 64 bits makes the write raise. We keep orjson's exact bytes wherever it can
write a value and fall back, for the subtrees it refuses, to an iterative writer that renders
leaves with orjson (so floats keep orjson's spelling), wide integers exactly and any depth
without recursion. No value is ever lost and no value can make a write raise.

This is the one home of JSON writing in the library: rows, health files, perf_summary and the
part encoding all go through :func:`dumps` (a long enriched row through :func:`write_row`, which
writes the same bytes in pieces), and a value read from a row is keyed by its text through
:func:`key_text`.
"""

from __future__ import annotations

import io
import itertools
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

__all__ = [
    "Layout",
    "Streamed",
    "WrittenRow",
    "deep_recursion",
    "deep_retry",
    "dump_pieces",
    "dump_row",
    "dumps",
    "key_text",
    "loads_exact",
    "loads_line",
    "orjson_line",
    "write_row",
]

SPLIT_DEPTH = 3
"""Containers above this depth are written member by member (the row, ``ng_trajectory``, its
``model_calls``); deeper values go to orjson whole. Long rows are long lists of turns, calls and
messages at depth 2 or 3, so their pieces are one item each."""

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


class Streamed:
    """A JSON array whose items come one at a time, for :func:`dump_pieces` (orjson cannot write it).

    A document with one item per rollout (an aggregate-metrics task entry holds every rollout's
    ``rollout_infos``) is written as its items are made, so the process never holds it whole.
    Iterable once: each item is made, written and dropped.
    """

    __slots__ = ("items",)

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = iter(items)


def dump_pieces(value: Any, *, indent: bool = False, depth: int = 0) -> Iterator[bytes]:
    """``dumps(value, indent=indent)`` in pieces, each :class:`Streamed` in it as the array of its items.

    The pieces joined are the bytes :func:`dumps` gives the same value with every ``Streamed``
    a list (the fallback writer's, which are orjson's wherever orjson can write a value); a
    member without a ``Streamed`` inside is one orjson call. ``depth``: the bytes the value has
    where it sits that deep in an indented document (its inner lines indented ``2 * depth``
    spaces more), so an item of a larger document can be written on its own.
    """
    if not isinstance(value, (dict, list, Streamed)):
        return iter((dumps(value, indent=indent),))
    return _pieces(value, indent, depth=depth)


def key_text(value: Any) -> str:
    """``value``'s JSON text with object keys sorted: a hashable key for a list or object read from a row.

    orjson's text wherever orjson can write the value (so keys already recorded stay the same),
    the fallback writer's otherwise: a key is made of any parsed value, however deep or wide
    (issue 45: one identity nested past orjson's 255 levels failed a whole run).
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except orjson.JSONEncodeError:
        return b"".join(_pieces(value, False, sort_keys=True)).decode()


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


Layout = slice | dict[str, "Layout"] | list["Layout"]
"""Where the pieces of a row sit in its line: a slice of the line for a value written whole, a
dict (key -> layout) or list (of layouts) for a container written member by member."""


@dataclass(frozen=True, slots=True)
class WrittenRow:
    """A row's line and what its writing established.

    Attributes:
        line: the row's JSON text (for :func:`write_row`, ``dump_row(row)`` byte for byte).
        canonical: orjson wrote all of it, so ``orjson_line(row)`` would have returned ``line``
            (see there for what that guarantees a reader).
        pieces: where :func:`write_row` put each piece of a canonical line; None otherwise.
    """

    line: bytes
    canonical: bool
    pieces: Layout | None = None

    def value(self) -> Any:
        """``orjson.loads(line)``, decoded piece by piece when the pieces are known.

        Each piece is orjson's own text, so the values are equal; the decoder's working copy
        is one piece's instead of the whole line's, which for a long row is the size of the line.

        Raises:
            orjson.JSONDecodeError: the line is not JSON orjson reads (only a line not written here).
        """
        if self.pieces is None:
            return orjson.loads(self.line)
        with memoryview(self.line) as view:
            return _decoded(view, self.pieces)


def _decoded(view: memoryview, layout: Layout) -> Any:
    if isinstance(layout, slice):
        return orjson.loads(view[layout])
    if isinstance(layout, dict):
        return {key: _decoded(view, piece) for key, piece in layout.items()}
    return [_decoded(view, piece) for piece in layout]


def write_row(row: dict[str, Any], *, in_pieces: bool) -> WrittenRow:
    """``dump_row(row)``; ``in_pieces``: emptying ``row`` as it goes so what is written can be freed.

    One ``orjson.dumps`` of a long row holds at once the row's objects, the UTF-8 copy orjson
    caches inside every non-ASCII string it writes, and the output: several times the line for
    a long unicode row. Written in pieces, each piece's objects (and their UTF-8 copies) are
    released as soon as it is written, so memory falls while the line grows: ``row`` and each
    container above :data:`SPLIT_DEPTH` are emptied member by member. A container something else
    also refers to (the caller, or another place in the row) is written whole and left intact,
    so a shared value is never lost; the row itself is always emptied.

    Every piece goes to orjson nested as deeply as it sits in the row, so orjson's depth limit
    applies as it would to the whole row; a piece orjson refuses goes to the fallback writer,
    whose bytes for it are the ones :func:`dumps` would give the whole row there.

    Pieces cost a Python step and an orjson call each, so a short row, whose copies are small,
    is better written whole (``in_pieces=False``: ``row`` is left as it is).

    Raises:
        TypeError: ``row`` holds something that is not a JSON value (as :func:`dump_row`).
    """
    if not in_pieces:
        line = orjson_line(row)
        return WrittenRow(dump_row(row), False) if line is None else WrittenRow(line, True)
    writer = _PieceWriter()
    pieces = writer.split(row, 0)
    return WrittenRow(writer.out.getvalue(), writer.canonical, pieces if writer.canonical else None)


class _PieceWriter:
    """The output of :func:`write_row` and whether orjson has written all of it so far."""

    def __init__(self) -> None:
        self.out = io.BytesIO()  # grows in place, and getvalue() hands over its buffer uncopied
        self.canonical = True

    def split(self, container: dict[str, Any] | list[Any], depth: int) -> Layout:
        """Write ``container`` member by member (it is empty afterwards); the members' layout."""
        layout: dict[str, Layout] | list[Layout] = {} if isinstance(container, dict) else []
        self.out.write(b"{" if isinstance(container, dict) else b"[")
        for key, prefix, member in self.members(container):
            self.out.write(prefix)
            # 2: the loop's name and getrefcount's argument; nothing else can see the member emptied
            if depth + 1 < SPLIT_DEPTH and isinstance(member, (dict, list)) and member and sys.getrefcount(member) == 2:
                piece = self.split(member, depth + 1)
            else:
                piece = self.whole(member, depth + 1)
            if isinstance(layout, dict):
                layout[key] = piece
            else:
                layout.append(piece)
        self.out.write(b"}" if isinstance(container, dict) else b"]")
        return layout

    def members(self, container: dict[str, Any] | list[Any]) -> Iterator[tuple[str, bytes, Any]]:
        """``(key, separator and key, member)`` in order (key "" in a list), each member taken
        out of the container first."""
        if isinstance(container, dict):
            for position, key in enumerate(list(container)):
                yield key, (b"," if position else b"") + self.key(key), container.pop(key)
            return
        container.reverse()  # popping from the end takes the members out in order, each in O(1)
        separator = b""
        while container:
            yield "", separator, container.pop()
            separator = b","

    def whole(self, value: Any, depth: int) -> slice:
        """Write ``value`` in one piece, wrapped in ``depth`` arrays for orjson to see its depth."""
        start = self.out.tell()
        wrapped = value
        for _ in range(depth):
            wrapped = [wrapped]
        try:
            text = orjson.dumps(wrapped)
        except orjson.JSONEncodeError:
            self.canonical = False
            self.out.write(b"".join(_pieces(value, False)))
        else:
            self.out.write(memoryview(text)[depth : len(text) - depth])
        return slice(start, self.out.tell())

    def key(self, key: Any) -> bytes:
        """The key and its colon; a key orjson refuses makes the row non-canonical."""
        text = _orjson_key(key)
        if text is None:
            self.canonical = False
            text = _key(key)
        return text + b":"


def loads_exact(data: bytes) -> Any:
    """Parse JSON keeping integers of any width exact (orjson turns wide ones into floats), at any
    depth this module writes (the stdlib parser recurses, and stops near 1,000 levels)."""
    return deep_retry(lambda: json.loads(data))


def loads_line(line: bytes) -> Any:
    """A line this module wrote, read back: orjson's value, or, for a line orjson refuses (nested
    past its 1,024 levels, a lone surrogate written escaped), Python's ``json``'s exact one.

    Raises:
        ValueError: the line is not JSON (never one written here).
    """
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return loads_exact(line)


DEEP_RECURSION = 5000
"""Recursion room for a value read from a row: orjson parses a row to 1,024 levels, and the stage
wraps such a value in a few containers of its own (a digest in a part, a record in a spill)."""

T = TypeVar("T")


def deep_retry(call: Callable[[], T]) -> T:
    """``call()``, called again under :func:`deep_recursion` when the default limit stopped it.

    For the walks over row values that recurse (the stdlib JSON parser and encoder, ``str()``,
    ``==``, pickle): a value read from a row can be nested past the default limit (1,000), and
    such a value must not fail a run (issue 45). ``call`` must be safe to call twice.
    """
    try:
        return call()
    except RecursionError:
        with deep_recursion():
            return call()


@contextmanager
def deep_recursion() -> Iterator[None]:
    """The interpreter's recursion limit raised to :data:`DEEP_RECURSION` for the block (never lowered).

    The limit is process-wide: raising it for a moment only lets other threads recurse deeper
    meanwhile, and a thread's C stack (8 MiB) holds such a walk many times over.
    """
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(max(saved, DEEP_RECURSION))
    try:
        yield
    finally:
        sys.setrecursionlimit(saved)


def _leaf(value: Any) -> bytes:
    """A scalar orjson refused: a wide integer, or a string holding a lone surrogate."""
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return orjson.dumps(value)
    if isinstance(value, int):
        return str(value).encode()
    if isinstance(value, str):
        return json.dumps(value).encode()  # \\uXXXX escapes: valid JSON text for any code point
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def _pieces(value: Any, indent: bool, *, sort_keys: bool = False, depth: int = 0) -> Iterator[bytes]:
    """The fallback writer: containers walked with an explicit stack, children tried with orjson
    first; a ``Streamed`` is walked as a list, its items taken as it reaches them."""
    option = (_INDENT if indent else 0) | (orjson.OPT_SORT_KEYS if sort_keys else 0)
    # Each frame: (iterator over (key or None, child), closing bracket, depth, first-item flag holder)
    stack: list[tuple[Iterator[tuple[str | None, Any]], bytes, int, list[bool]]] = []

    def open_container(container: Any, depth: int) -> bytes:
        if isinstance(container, Streamed):
            first = next(container.items, _END)
            if first is _END:
                return b"[]"
            stack.append((((None, child) for child in itertools.chain((first,), container.items)), b"]", depth, [True]))
            return b"["
        if isinstance(container, dict):
            items: Iterator[tuple[str | None, Any]] = iter(sorted(container.items()) if sort_keys else container.items())
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
        if isinstance(child, Streamed):
            return None
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

    if not isinstance(value, (dict, list, Streamed)):
        yield _leaf(value)
        return
    yield open_container(value, depth)
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
    text = _orjson_key(key)
    return json.dumps(key).encode() if text is None else text


def _orjson_key(key: Any) -> bytes | None:
    """orjson's rendering of a dict key, None for a string it refuses (a lone surrogate).

    Raises:
        TypeError: the key is not a string (orjson refuses it, and so does the fallback).
    """
    if not isinstance(key, str):
        raise TypeError("Dict key must be str")
    try:
        return orjson.dumps(key)
    except orjson.JSONEncodeError:
        return None


_END: Any = object()
