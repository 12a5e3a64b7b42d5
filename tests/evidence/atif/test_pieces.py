"""The ATIF text in pieces is the whole document's pretty JSON, byte for byte."""

from __future__ import annotations

import copy
from typing import Any

import pydantic_core
from hypothesis import given, settings
from hypothesis import strategies as st

from evidence.atif.encode import text_pieces

_SCALARS = st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=False) | st.text()
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(
    head=st.dictionaries(st.text(max_size=8).filter(lambda key: key != "steps"), _VALUES, max_size=4),
    steps=st.lists(_VALUES, max_size=5) | _VALUES,
    tail=st.dictionaries(st.text(max_size=8).filter(lambda key: key != "steps"), _VALUES, max_size=3),
)
def test_pieces_join_to_the_pretty_document(head: dict[str, Any], steps: Any, tail: dict[str, Any]) -> None:
    document = {**head, "steps": steps, **{k: v for k, v in tail.items() if k not in head}}
    expected = pydantic_core.to_json(copy.deepcopy(document), indent=2)
    assert b"".join(text_pieces(document)) == expected


def test_each_step_is_a_piece_and_the_steps_are_released() -> None:
    document = {"schema_version": "ATIF-v1.7", "steps": [{"step_id": 1, "message": "a\nb"}, {"step_id": 2}], "extra": {}}
    pieces = text_pieces(document)
    assert document["steps"] == []
    assert [piece.count(b"step_id") for piece in pieces if b"step_id" in piece] == [1, 1]
