"""Writing a row in pieces: the bytes of ``dump_row``, orjson's verdict, memory released as it goes,
and the line decoded back piece by piece to orjson's value."""

from __future__ import annotations

import copy
import math
import tracemalloc
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evidence.jsonl import SPLIT_DEPTH, Streamed, WrittenRow, dump_pieces, dump_row, dumps, orjson_line, write_row

# Strings with lone surrogates (orjson refuses them), astral and other non-ASCII characters.
TEXT = st.text(st.characters(blacklist_categories=()), max_size=6)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)  # beyond 64 bits: only the fallback writes them
    | st.floats(allow_nan=True, allow_infinity=True)
    | TEXT
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4), max_leaves=30)


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def _assert_written_like_dump_row(row: dict[str, Any]) -> None:
    expected, verdict = dump_row(row), orjson_line(row) is not None
    written = write_row(copy.deepcopy(row), in_pieces=True)  # deepcopy keeps the row's sharing
    assert written.line == expected
    assert written.canonical is verdict
    assert (written.pieces is not None) is verdict
    assert write_row(copy.deepcopy(row), in_pieces=False) == WrittenRow(expected, verdict)
    if verdict:  # decoded piece by piece: the value orjson reads from the whole line, in order
        decoded, whole = written.value(), orjson.loads(written.line)
        assert decoded == whole
        assert orjson.dumps(decoded) == orjson.dumps(whole)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(TEXT, VALUES, max_size=5))
def test_pieces_are_dump_row_bytes_and_orjson_verdict(row: dict[str, Any]) -> None:
    _assert_written_like_dump_row(row)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(TEXT, VALUES, max_size=3), st.integers(min_value=0, max_value=3))
def test_a_value_shared_by_two_places_is_written_in_both(row: dict[str, Any], where: int) -> None:
    shared = [{"x": ["é", 1, [2]]}, "😀"]
    holder: dict[str, Any] = {"first": shared, "second": {"again": [shared]}}
    row["h"] = holder if where % 2 else [holder, shared]
    _assert_written_like_dump_row(row)


@pytest.mark.parametrize("at", range(SPLIT_DEPTH + 2))
@pytest.mark.parametrize("depth", [250, 251, 252, 253, 254, 255])
def test_orjson_depth_limit_applies_as_to_the_whole_row(at: int, depth: int) -> None:
    """A deep value ``at`` levels down: orjson refuses the row exactly when the whole row is too deep."""
    row: dict[str, Any] = {"deep": _nested(depth), "b": 1}
    for _ in range(at):
        row = {"a": [row, "c"]}
    _assert_written_like_dump_row(row)


@pytest.mark.parametrize("row", [{"wide": [2**64]}, {"x": {"lone \ud800": 1}}, {"n": [math.nan, -0.0, 1e16]}])
def test_rows_with_fallback_pieces(row: dict[str, Any]) -> None:
    _assert_written_like_dump_row(row)


@pytest.mark.parametrize("row", [{1: "key"}, {"a": {"b": [{2: "key"}]}}, {"a": {"b": {3: []}}}])
def test_a_non_string_key_raises_as_dump_row_does(row: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        dump_row(row)
    with pytest.raises(TypeError):
        write_row(row, in_pieces=True)


def test_containers_held_elsewhere_are_left_intact() -> None:
    held = [{"deep": ["é"]}, 2]
    row = {"a": {"b": held}, "c": [held]}
    assert write_row(row, in_pieces=True).line == b'{"a":{"b":[{"deep":["\xc3\xa9"]},2]},"c":[[{"deep":["\xc3\xa9"]},2]]}'
    assert row == {}
    assert held == [{"deep": ["é"]}, 2]


def _long_row() -> dict[str, Any]:
    """A long unicode row: 4 bytes per character in memory, a UTF-8 copy when orjson writes it."""
    return {"ng_trajectory": {"turns": [{"question": f"{n} \U0001f600 " + "ü" * 50_000} for n in range(200)]}, "id": "r"}


def _peak(write: Any) -> float:
    """Peak traced bytes above the row while ``write`` writes it (the row is traced, so frees count)."""
    tracemalloc.start()
    try:
        row = _long_row()
        tracemalloc.reset_peak()
        baseline = tracemalloc.get_traced_memory()[0]
        line = write(row)
        del row
        peak = tracemalloc.get_traced_memory()[1] - baseline
    finally:
        tracemalloc.stop()
    assert len(line) > 10_000_000
    return peak


def test_writing_in_pieces_frees_what_is_written() -> None:
    """orjson holds the row (~40 MB), its UTF-8 copies (~20 MB) and the line (~20 MB) at once;
    in pieces, each written turn (4 bytes a character) is freed as its UTF-8 (2) is written."""
    whole = _peak(orjson.dumps)
    pieces = _peak(lambda row: write_row(row, in_pieces=True).line)
    assert whole > 35_000_000
    assert pieces < 0.1 * whole


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, {"b": []}], "t": [], "z": {"deep": [2**70, "\u00e9"]}},
        [{"x": 1.5, "items": [{"k": [1, 2]}, {}], "after": None}],
        {"items": [[[[1]]]], "nested": [{"items": [3]}]},
    ],
)
@pytest.mark.parametrize("depth", [0, 1, 3])
def test_dump_pieces_writes_a_streamed_array_as_dumps_writes_the_list(value: Any, depth: int) -> None:
    """Every list under an ``items`` key streamed: the pieces are ``dumps``' bytes of the value,
    indented as if ``depth`` levels deep (an empty stream is ``[]``, as an empty list)."""

    def streaming(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: Streamed(map(streaming, child)) if key == "items" else streaming(child) for key, child in node.items()}
        return [streaming(child) for child in node] if isinstance(node, list) else node

    for indent in (True, False):
        pieces = b"".join(dump_pieces(streaming(value), indent=indent, depth=depth))
        whole = dumps(value, indent=indent)
        assert pieces == (whole.replace(b"\n", b"\n" + b"  " * depth) if indent else whole)
    assert b"".join(dump_pieces(Streamed(iter(())), indent=True)) == b"[]"
