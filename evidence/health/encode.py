"""JSON text exactly as 0.7.0's health writer produces it (orjson), without its crash.

orjson refuses integers beyond 64 bits; such values cannot come from a strictly parsed line but
can reach the stage through an enriched row, so that one document falls back to the standard
library, whose output is byte-identical for these contents.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps_compact(value: Any) -> str:
    """Compact JSON, raw UTF-8 (a verdict line without its newline)."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def dumps_indented(value: Any) -> str:
    """JSON with 2-space indentation, raw UTF-8, no trailing newline (the quality summary)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except orjson.JSONEncodeError:
        return json.dumps(value, indent=2, ensure_ascii=False)
