"""Writing rows as JSONL the way Gym's writer does, without its two failure modes.

Gym persists with orjson: non-finite floats become ``null`` and an integer beyond 64 bits makes
the write raise. We keep the ``null`` rendering and write wide integers exactly (fallback encoder
for that one row), so no row is ever lost.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson


def dump_row(row: Any) -> bytes:
    """One JSONL line (no trailing newline); value-equal to what orjson would have written."""
    line = orjson_line(row)
    if line is None:
        return json.dumps(_finite_or_null(row), ensure_ascii=False, separators=(",", ":")).encode()
    return line


def orjson_line(row: Any) -> bytes | None:
    """orjson's own rendering of ``row``, or None when only ``dump_row``'s fallback can write it.

    Such a line is strict JSON by construction: unique keys, no NaN/Infinity literals, floats
    in their shortest round-trip spelling, integers within 64 bits, valid UTF-8 without lone
    surrogates. Any reader that refuses lossy JSON therefore decodes it to exactly
    ``orjson.loads(line)``, which lets callers parse it once.
    """
    try:
        return orjson.dumps(row)
    except orjson.JSONEncodeError:
        return None


def _finite_or_null(value: Any) -> Any:
    """Replace non-finite floats with None, as orjson renders them."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite_or_null(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite_or_null(v) for v in value]
    return value
