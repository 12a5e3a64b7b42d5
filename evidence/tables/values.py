"""How a table reads one value out of a row: the type a column holds, or None (null) when the row holds anything else.

Every column's type is fixed by the schema (``evidence.tables.schema``), whatever a row holds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evidence.jsonl import dumps

INT64 = 2**63
"""Integers from -INT64 to INT64 - 1 fit an int64 column."""
_INT64_MIN = -INT64  # negated once, not on every read
OBJECT = (dict, Mapping)
"""``isinstance(value, OBJECT)`` is ``isinstance(value, Mapping)``, made quick for a JSON object:
a dict is recognised by its type before the Mapping ABC's slower subclass hook runs."""

# The readers run for every field of every turn and call. The values are JSON's own types, so
# each reader tests the exact type a row holds first (``type(value) is ...``, or ``OBJECT``),
# ahead of the slower general test that settles the rest (subclasses, bool, the ABC).


def as_object(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, OBJECT) else None


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_length(value: Any) -> int | None:
    return len(value) if isinstance(value, list) else None


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def as_bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def as_int(value: Any) -> int | None:
    """An integer that fits int64 (booleans are not integers here; neither are integral floats)."""
    if type(value) is int or (isinstance(value, int) and not isinstance(value, bool)):
        return value if _INT64_MIN <= value < INT64 else None
    return None


def as_float(value: Any) -> float | None:
    """A finite number as a double (booleans are not numbers here)."""
    if type(value) is float:
        return value if math.isfinite(value) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer wider than any double
        return None
    return number if math.isfinite(number) else None


def as_number(value: Any) -> float | None:
    """A number or boolean as a double (true 1, false 0)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    return as_float(value)


def as_present(value: Any) -> bool:
    """Whether a payload is there (its content stays out of the tables)."""
    return value is not None


def as_text(value: Any) -> str | None:
    """A string as it is; any other non-null value as compact JSON."""
    if value is None or isinstance(value, str):
        return value
    return dumps(value).decode()
