"""Strict JSON for the ATIF export: a loader that refuses lossy input, value hygiene, equality.

0.7.0 refuses anything it could not write back byte-faithfully: NaN/Infinity, duplicate keys,
floats whose literal does not survive the float round trip, and lone surrogates (which cannot
be UTF-8 encoded). Comparisons of "the copy must equal the original" are type-aware, so
``true`` never equals ``1`` although Python says so.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

from evidence.errors import AtifExportError

__all__ = ["check_json_value", "json_equal", "loads_strict", "may_hold_surrogate"]

_SIGNIFICANT_DIGIT = re.compile(r"[1-9]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-JSON numeric constant {name!r}")


def _exact_float(literal: str) -> float:
    """Parse a float literal, refusing overflow, underflow and digits the float cannot hold."""
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(f"JSON number {literal!r} exceeds the finite float range")
    significand = literal.split("e", maxsplit=1)[0].split("E", maxsplit=1)[0]
    if value == 0.0 and _SIGNIFICANT_DIGIT.search(significand):
        raise ValueError(f"JSON number {literal!r} underflows the finite float range")
    if Decimal(literal) != Decimal(repr(value)):
        raise ValueError(f"JSON number {literal!r} cannot be represented without precision loss")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate object key {key!r}")
            seen.add(key)
    return obj


def loads_strict(text: str) -> Any:
    """Decode one JSON document under 0.7.0's strict rules.

    Raises ``ValueError`` (its text is the loader detail) or ``RecursionError`` for absurd
    nesting; callers that only report "invalid JSON" catch both.
    """
    return json.loads(
        text,
        parse_constant=_reject_constant,
        parse_float=_exact_float,
        object_pairs_hook=_unique_keys,
    )


def may_hold_surrogate(raw: bytes) -> bool:
    """Whether JSON text could decode to a lone surrogate (only a ``\\uD8xx``-style escape can).

    Over-approximates (an escaped backslash before ``ud800`` also matches), never misses: it
    lets the stage skip walking large rows that cannot fail the hygiene check.
    """
    return _SURROGATE_ESCAPE.search(raw) is not None


def _problem(value: Any) -> tuple[list[str], str] | None:
    """Find the first non-JSON value depth-first; return its reversed path segments and detail."""
    if value is None or isinstance(value, (bool, int)):
        return None
    if isinstance(value, str):
        if not value.isascii() and _SURROGATE.search(value):
            return [], "contains an unpaired Unicode surrogate and is not valid UTF-8 JSON"
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else ([], "non-finite numbers are not valid JSON")
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _problem(item)
            if found is not None:
                found[0].append(f"[{index}]")
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return [], "JSON object keys must be strings"
            if not key.isascii() and _SURROGATE.search(key):
                return ([".<key>"], "contains an unpaired Unicode surrogate and is not valid UTF-8 JSON")
            found = _problem(item)
            if found is not None:
                found[0].append(f".{key}")
                return found
        return None
    return [], f"{type(value).__name__} is not a JSON value"


def check_json_value(value: Any, root: str) -> None:
    """Raise 0.7.0's hygiene error for the first value that is not representable as JSON."""
    found = _problem(value)
    if found is not None:
        segments, detail = found
        raise AtifExportError(f"{root}{''.join(reversed(segments))}: {detail}")


def json_equal(left: Any, right: Any) -> bool:
    """JSON equality with types: bools only equal bools, numbers compare by value, order-free keys.

    Strings, objects and lists come first: they are what the turn copies are made of.
    """
    if isinstance(left, str):
        return isinstance(right, str) and left == right
    if isinstance(left, dict):
        return isinstance(right, dict) and left.keys() == right.keys() and all(json_equal(item, right[key]) for key, item in left.items())
    if isinstance(left, list):
        return isinstance(right, list) and len(left) == len(right) and all(json_equal(a, b) for a, b in zip(left, right, strict=True))
    if left is None or right is None:
        return left is None and right is None
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    return isinstance(left, (int, float)) and isinstance(right, (int, float)) and left == right
