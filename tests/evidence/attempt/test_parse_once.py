"""Parsing an enriched row once: orjson's own lines convert to ATIF exactly as the strict path does."""

from __future__ import annotations

import enum
import math

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from evidence.atif import AtifRefusal, convert_row, encode_converted
from evidence.atif.convert import AtifIdentity
from evidence.errors import AtifExportError
from evidence.jsonl import dump_row, orjson_line
from evidence.models.response_items import FileSearchResult
from evidence.models.trajectory import TrajectoryModelCall
from evidence.roundtrip import decodes_to_itself, json_dump_decodes_to_itself
from tests.conformance.conftest import strict_diff
from tests.evidence.atif.test_samples import EXPORTER, content, export_line, sample_rows

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats() | st.text(),
    lambda children: st.lists(children, max_size=4) | st.tuples(children) | st.dictionaries(st.text(max_size=3), children, max_size=4),
    max_leaves=20,
)

IDENTITY = {"session_id": "sample", "agent_version": "1.0.0", "exporter": EXPORTER}


def _convert_orjson_value(row: dict, **identity) -> object:
    """The engine's conversion of an orjson line's value: no second strict decoding, no hygiene walk."""
    atif = encode_converted(convert_row(row, AtifIdentity(**identity), hygiene=False))
    if isinstance(atif, AtifRefusal):
        raise AtifExportError(atif.message)
    return atif


def _outcome(convert, source) -> tuple[str, bytes]:
    try:
        rollout = convert(source, **IDENTITY)
    except AtifExportError as error:
        return "error", error.message.encode()
    return rollout.name, content(rollout) + rollout.manifest_line


@pytest.mark.parametrize("job", ["realistic_job", "hostile_job"])
def test_orjson_value_converts_like_the_strict_line(job: str) -> None:
    outcomes = set()
    for line, _ in sample_rows(job):
        canonical = orjson_line(orjson.loads(line))
        assert canonical is not None
        strict = _outcome(export_line, canonical)
        assert _outcome(_convert_orjson_value, orjson.loads(canonical)) == strict
        outcomes.add(strict[0] == "error")
    assert outcomes == {True, False}


@pytest.mark.parametrize("row", [{"wide": 2**64}, {"lone": "\ud800"}, {1: "non-string key"}])
def test_rows_orjson_cannot_write_have_no_orjson_line(row: dict) -> None:
    assert orjson_line(row) is None


def test_non_finite_floats_are_null_in_both_renderings() -> None:
    row = {"a": math.nan, "b": [math.inf, 1.5]}
    assert orjson_line(row) == dump_row(row) == b'{"a":null,"b":[null,1.5]}'


class _Level(enum.IntEnum):
    HIGH = 2


@pytest.mark.parametrize(
    ("value", "reads_back"),
    [
        ({"a": [1, 2.5, "x", True, None, {"b": []}], "c": -0.0}, True),
        ({"a": [float("inf")]}, False),
        ({"a": {"b": float("nan")}}, False),
        ({"a": (1, 2)}, False),
        ({"a": _Level.HIGH}, False),
    ],
)
def test_a_written_value_decodes_to_itself_exactly_when_the_check_says_so(value: dict, reads_back: bool) -> None:
    decoded = orjson.loads(orjson.dumps(value))
    assert decodes_to_itself(value) is reads_back
    assert (strict_diff(decoded, value) is None) is reads_back


@given(json_values)
def test_the_check_never_claims_a_value_that_reads_back_differently(value: object) -> None:
    try:
        line = orjson.dumps(value)
    except orjson.JSONEncodeError:  # a lone surrogate: no orjson line, nothing to claim
        return
    if decodes_to_itself(value):
        assert strict_diff(orjson.loads(line), value) is None


def test_a_model_dump_reads_back_unless_a_typed_float_is_not_finite() -> None:
    """JSON mode makes untyped content native (NaN becomes None) but keeps a typed float as it is."""
    untyped = TrajectoryModelCall(request={"temperature": float("nan"), "stop": ("a",)})
    assert json_dump_decodes_to_itself(untyped)
    assert decodes_to_itself(untyped.model_dump(mode="json"))
    typed = (
        TrajectoryModelCall(started_at=float("inf")),
        TrajectoryModelCall(response_metadata={"latency_ttft_ms": float("inf")}),
        FileSearchResult(attributes={"score": float("nan")}),
    )
    for model in (*typed, _Nested(grid=[[1.0, float("inf")]]), _Nested(series={"a": [float("nan")]})):
        assert not json_dump_decodes_to_itself(model)
        assert not decodes_to_itself(model.model_dump(mode="json"))
    assert json_dump_decodes_to_itself(_Nested(grid=[[1.0]], series={"a": [2.0]}))


class _Nested(BaseModel):
    grid: list[list[float]] = []
    series: dict[str, list[float]] = {}
