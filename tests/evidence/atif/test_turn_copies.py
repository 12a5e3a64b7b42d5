"""A turn's copies of the conversation: the ones the preflight finds equal to their items
(``CopyMatches``) are judged as the ones parsed and compared (``json_equal``)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from evidence.atif.convert import rollout_to_atif
from evidence.atif.preflight import preflight_trajectory
from evidence.errors import AtifExportError
from evidence.models.atif import Exporter

_CASE = Path(__file__).resolve().parents[2] / "conformance" / "cases" / "atif" / "01_canonical_two_turn_tools_reasoning.json"
_IDENTITY = {"session_id": "s", "agent_version": "1.0.0", "exporter": Exporter(name="evidence-stage", version="0")}
_COPIES = ("question", "answer", "reasoning_content")


def _row() -> dict[str, Any]:
    row: dict[str, Any] = json.loads(json.loads(_CASE.read_text("utf-8"))["rollouts_jsonl"].splitlines()[0])
    return row


def _convert(row: dict[str, Any]) -> dict[str, Any]:
    return rollout_to_atif(copy.deepcopy(row), **_IDENTITY)


def _reordered(value: Any) -> Any:
    """The value with every object's members in reverse order (equal, and equal as JSON)."""
    if isinstance(value, dict):
        return {key: _reordered(value[key]) for key in reversed(value)}
    if isinstance(value, list):
        return [_reordered(item) for item in value]
    return value


def test_every_copy_of_a_faithful_row_is_matched() -> None:
    turns = _row()["ng_trajectory"]["turns"]
    assert [sorted(spans) for spans in preflight_trajectory(_row()["ng_trajectory"]).turns] == [sorted(_COPIES)] * len(turns)


def test_copies_whose_members_come_in_another_order_are_matched_and_convert_the_same() -> None:
    row = _row()
    reordered = copy.deepcopy(row)
    for turn in reordered["ng_trajectory"]["turns"]:
        for name in _COPIES:
            turn[name] = _reordered(turn[name])
    assert preflight_trajectory(reordered["ng_trajectory"]).turns == preflight_trajectory(row["ng_trajectory"]).turns
    assert _convert(reordered) == _convert(row)


@pytest.mark.parametrize("copied", [True, 1.0])
def test_a_copy_equal_to_its_item_only_as_python_values_is_not_matched(copied: Any) -> None:
    """``true == 1 == 1.0`` in Python: an item holding a number is never matched, so its copy is
    checked, parsed and compared as 0.7.0 does, which tells ``true`` from ``1``."""
    question = [{"type": "message", "role": "user", "content": "q"}]
    part = {"type": "output_text", "text": "t", "annotations": [{"type": "file_path", "file_id": "f", "index": 1}]}
    message = {"id": "m", "type": "message", "role": "assistant", "content": [part]}
    copied_part = {**part, "annotations": [{**part["annotations"][0], "index": copied}]}
    trajectory = {
        "invocations": [{"conversation": [*question, message]}],
        "turns": [{"question": copy.deepcopy(question), "answer": [{**message, "content": [copied_part]}]}],
    }
    assert preflight_trajectory(trajectory).turns == [{"question": range(1)}]


def test_a_question_one_item_short_of_its_prefix_differs() -> None:
    row = _row()
    row["ng_trajectory"]["turns"][1]["question"].pop()
    with pytest.raises(AtifExportError) as refused:
        _convert(row)
    assert refused.value.message == "ng_trajectory.turns[1].question: does not match the model-visible conversation prefix"


def test_a_copy_with_an_item_the_preflight_refuses_is_refused_there() -> None:
    row = _row()
    row["ng_trajectory"]["turns"][1]["question"][1]["phase"] = "final"
    with pytest.raises(AtifExportError) as refused:
        _convert(row)
    assert refused.value.message == "ng_trajectory.turns[1].question[1].phase: Responses message phase is not representable in ATIF v1.7"
