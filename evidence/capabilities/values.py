"""Tolerant readers for JSON values: rows are evidence, so a wrong type is data, never a crash."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeGuard


def as_dict(value: Any) -> Mapping[str, Any]:
    """The value if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """The value if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def dicts(value: Any) -> list[dict[str, Any]]:
    """The objects of a JSON array; other items are not evidence of anything."""
    return [item for item in as_list(value) if isinstance(item, dict)]


def is_number(value: Any) -> TypeGuard[int | float]:
    """A finite JSON number (bools are not numbers here, unlike in perf_summary)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def finite_float(value: Any) -> float | None:
    """A JSON number as a finite float, booleans as 1 or 0 (as 0.7.0's scores count them); None for
    anything else, an integer no float holds (past 1e308) included."""
    if not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def is_int(value: Any) -> TypeGuard[int]:
    """An exact JSON integer (``true`` and ``200.0`` are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_count(value: Any) -> TypeGuard[int]:
    """A valid token count as 0.7.0 defines it: an exact integer ≥ 0."""
    return is_int(value) and value >= 0


def nonempty_str(value: Any) -> TypeGuard[str]:
    """A string with at least one character (0.7.0 treats ``""`` ids as absent)."""
    return isinstance(value, str) and value != ""
