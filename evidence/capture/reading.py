"""Tolerant reading of a ``<rollout_id>.capture.jsonl`` file (spec: collection.md §3.3).

The writer appends one JSON object per model exchange; a crash or a concurrent writer can leave
damaged lines. Damage is counted, never fatal: every non-blank line consumes a ``call_index``
so the indices of the good records stay stable whatever happened around them.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from evidence.capture.record import build_record
from evidence.models.capture import ModelCallRecord

__all__ = ["read_capture"]


def read_capture(data: bytes) -> tuple[list[ModelCallRecord], int]:
    """Return ``(records in file order, number of unusable non-blank lines)``.

    Lines split on ``\\n`` only and are stripped of ASCII whitespace; blank lines consume no
    index. Parsing is orjson's (BOM, NaN, lone surrogates and ``1e400`` are errors; integers
    beyond 64 bits become floats), which is what 0.7.0 uses.
    """
    records: list[ModelCallRecord] = []
    invalid = 0
    call_index = 0
    for raw in _lines(data):
        line = raw.strip()
        if not line:
            continue
        index = call_index
        call_index += 1
        try:
            exchange = orjson.loads(line)
        except orjson.JSONDecodeError:
            invalid += 1
            continue
        if not isinstance(exchange, dict):
            invalid += 1
            continue
        try:
            records.append(build_record(exchange, index))
        except Exception:  # noqa: BLE001 - 0.7.0 counts ANY failure to build a record as unreadable
            invalid += 1
    return records, invalid


def _lines(data: bytes) -> Iterator[bytes]:
    """The ``\\n``-separated lines one at a time: a long capture is never copied whole."""
    start = 0
    while start <= len(data):
        end = data.find(b"\n", start)
        if end < 0:
            end = len(data)
        yield data[start:end]
        start = end + 1
