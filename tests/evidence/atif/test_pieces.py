"""The ATIF text in pieces is the whole document's pretty JSON, byte for byte."""

from __future__ import annotations

import copy
import math
import random
import struct
import sys
from typing import Any

import pydantic_core
from hypothesis import given, settings
from hypothesis import strategies as st

from evidence.atif.encode import text_pieces

# A document holds JSON values as a JSON text reads them: no non-finite float (which orjson
# would write as null, pydantic-core as Infinity).
_FINITE = st.floats(allow_nan=False, allow_infinity=False)
_SCALARS = st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | _FINITE | st.text()
_VALUES = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=20
)


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


def _pieces_text(value: Any) -> bytes:
    return b"".join(text_pieces({"steps": [value]}))


def test_orjson_writes_pydantic_cores_bytes_for_floats_ints_and_every_character() -> None:
    """The steps go through orjson; these are where two JSON writers could part (float spelling,
    escapes, wide integers): each is held to pydantic-core's text."""
    rng = random.Random(7)
    floats = [struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0] for _ in range(20_000)]
    floats += [rng.random() * 10.0 ** rng.randint(-30, 30) for _ in range(20_000)]
    floats += [0.0, -0.0, 5e-324, sys.float_info.max, sys.float_info.min, 1e16, 1e-7, 0.00001, 1e21, 1e22]
    ints = [0, -1, 2**53 + 1, 2**63 - 1, -(2**63), 2**63, 2**64 - 1, 2**64, -(2**63) - 1, 10**30]
    characters = [chr(code) for code in range(0x110000) if not 0xD800 <= code <= 0xDFFF]
    values: list[Any] = [value for value in floats if math.isfinite(value)]
    values += [*ints, "".join(characters[:0x800]), "".join(characters[0x800:]), {"\u2028": [{}, [], None, True]}]
    for value in values:
        assert _pieces_text(value) == pydantic_core.to_json({"steps": [value]}, indent=2), repr(value)[:80]
