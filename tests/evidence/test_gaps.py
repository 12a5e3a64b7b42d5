"""The gap-code registry (evidence.gaps) is the only place a gap code is spelt, and it is complete."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from evidence.collect import collect_row
from evidence.gaps import GAPS
from evidence.health.registry import CHECK_IDS
from tests.conformance.conftest import load_cases
from tests.conformance.test_collect_golden import lookup_from

EVIDENCE = Path(__file__).resolve().parents[2] / "evidence"
REGISTRY = EVIDENCE / "gaps.py"
# What a gap code looks like: the endings 0.7.0's codes (and the producers' codes) have.
GAP_SHAPE = re.compile(
    r"[a-z]+(?:_[a-z]+)*_(?:unavailable|failed|invalid|unreadable|incomplete|no_records|unmatched"
    r"|ambiguous|conflict|mismatch|redacted)"
)
# Gap-shaped words of other vocabularies: rollout failure classes, capability reason codes and
# run-comparison trust issues (health check ids are read from their registry).
NOT_GAP_CODES = frozenset(
    {
        "agent_request_failed",
        "environment_server_failed",
        "gate_failed",
        "sandbox_unavailable",
        "trajectory_unavailable",
    }
)


def _string_literals(path: Path) -> list[tuple[int, str]]:
    """Every string constant of a module except docstrings, with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def _library_literals() -> list[tuple[str, int, str]]:
    return [
        (str(path.relative_to(EVIDENCE)), line, value)
        for path in sorted(EVIDENCE.rglob("*.py"))
        if path != REGISTRY
        for line, value in _string_literals(path)
    ]


def test_registry_is_sorted_and_every_meaning_is_one_line() -> None:
    assert list(GAPS) == sorted(GAPS)
    assert all(meaning and "\n" not in meaning for meaning in GAPS.values())
    with pytest.raises(TypeError):
        GAPS["new_gap"] = "x"  # type: ignore[index]


def test_no_module_but_the_registry_spells_a_gap_code() -> None:
    spelt = [(path, line, value) for path, line, value in _library_literals() if value in GAPS]
    assert spelt == []


def test_every_gap_shaped_literal_is_a_registered_code() -> None:
    unregistered = [
        (path, line, value)
        for path, line, value in _library_literals()
        if GAP_SHAPE.fullmatch(value) and value not in NOT_GAP_CODES and value not in CHECK_IDS
    ]
    assert unregistered == []


def _gap_codes(value: Any) -> set[str]:
    """Codes of every gap object (``{"code": ...}`` in a ``gaps`` list) anywhere in a row."""
    if isinstance(value, list):
        return set().union(*map(_gap_codes, value)) if value else set()
    if not isinstance(value, dict):
        return set()
    found = set().union(*map(_gap_codes, value.values())) if value else set()
    for gap in value.get("gaps") or ():
        if isinstance(gap, dict) and isinstance(gap.get("code"), str):
            found.add(gap["code"])
    return found


@pytest.mark.parametrize(("name", "case"), load_cases("collect"), ids=[name for name, _ in load_cases("collect")])
def test_every_gap_code_collection_writes_is_registered(name: str, case: dict[str, Any]) -> None:
    collected = collect_row(case["row"], lookup_from(case["capture_files"]))
    written = _gap_codes(collected.row) - _gap_codes(case["row"])
    assert written <= set(GAPS)
