"""Parsing an enriched row once: orjson's own lines convert to ATIF exactly as the strict path does."""

from __future__ import annotations

import math

import orjson
import pytest

from evidence.atif import convert_rollout
from evidence.atif.convert import rollout_to_atif
from evidence.atif.encode import encode_rollout
from evidence.errors import AtifExportError
from evidence.jsonl import dump_row, orjson_line
from tests.evidence.test_atif_samples import EXPORTER, sample_rows

IDENTITY = {"session_id": "sample", "agent_version": "1.0.0", "exporter": EXPORTER}


def _convert_orjson_value(row: dict, **identity) -> object:
    """The engine's conversion of an orjson line's value: no second strict decoding, no hygiene walk."""
    return encode_rollout(rollout_to_atif(row, hygiene=False, **identity), row["_ng_task_index"], row["_ng_rollout_index"])


def _outcome(convert, source) -> tuple[str, bytes]:
    try:
        rollout = convert(source, **IDENTITY)
    except AtifExportError as error:
        return "error", error.message.encode()
    return rollout.file_name, rollout.content + rollout.manifest_line


@pytest.mark.parametrize("job", ["realistic_job", "hostile_job"])
def test_orjson_value_converts_like_the_strict_line(job: str) -> None:
    outcomes = set()
    for line, _ in sample_rows(job):
        canonical = orjson_line(orjson.loads(line))
        assert canonical is not None
        strict = _outcome(convert_rollout, canonical)
        assert _outcome(_convert_orjson_value, orjson.loads(canonical)) == strict
        outcomes.add(strict[0] == "error")
    assert outcomes == {True, False}


@pytest.mark.parametrize("row", [{"wide": 2**64}, {"lone": "\ud800"}, {1: "non-string key"}])
def test_rows_orjson_cannot_write_have_no_orjson_line(row: dict) -> None:
    assert orjson_line(row) is None


def test_non_finite_floats_are_null_in_both_renderings() -> None:
    row = {"a": math.nan, "b": [math.inf, 1.5]}
    assert orjson_line(row) == dump_row(row) == b'{"a":null,"b":[null,1.5]}'
