"""Shared helpers for the golden (conformance) tests.

The cases are JSON files produced by running NeMo Gym 0.7.0; they live in
``tests/conformance/cases/<area>/`` (a copy of ``../shared/conformance``). They are loaded with the
standard library on purpose: it keeps integers wider than 64 bits exact, which orjson would turn
into floats.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

CASES_DIR = Path(__file__).parent / "cases"


def load_cases(area: str) -> list[tuple[str, dict[str, Any]]]:
    """Every golden case of ``area`` as ``(file stem, parsed case)``, sorted by file name."""
    paths = sorted((CASES_DIR / area).glob("*.json"))
    return [(path.stem, json.loads(path.read_text(encoding="utf-8"))) for path in paths]


def as_persisted(value: Any) -> Any:
    """``value`` as Gym's writer persists it: non-finite floats become ``None``.

    Expected rows went through orjson, which writes NaN and infinities as ``null``; comparing our
    in-memory result needs the same rendering.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: as_persisted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_persisted(item) for item in value]
    return value


def strict_diff(actual: Any, expected: Any, path: str = "$") -> str | None:
    """The first difference between two JSON-like values, comparing types strictly.

    ``1``, ``1.0`` and ``True`` are all different here, unlike with ``==``. Key order is ignored
    (rows are compared by value). Returns a readable ``path: reason`` or ``None`` when equal.
    """
    if type(actual) is not type(expected):
        return f"{path}: type {type(actual).__name__} != {type(expected).__name__} ({actual!r} vs {expected!r})"
    if isinstance(actual, dict):
        if actual.keys() != expected.keys():
            return f"{path}: keys {sorted(actual)} != {sorted(expected)}"
        for key in actual:
            diff = strict_diff(actual[key], expected[key], f"{path}.{key}")
            if diff:
                return diff
        return None
    if isinstance(actual, list):
        if len(actual) != len(expected):
            return f"{path}: length {len(actual)} != {len(expected)}"
        for index, (left, right) in enumerate(zip(actual, expected, strict=False)):
            diff = strict_diff(left, right, f"{path}[{index}]")
            if diff:
                return diff
        return None
    if actual != expected:
        return f"{path}: {actual!r} != {expected!r}"
    return None
