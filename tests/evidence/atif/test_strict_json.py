"""Strict JSON rules of the ATIF export: loader, value hygiene, typed equality, file encoding."""

from __future__ import annotations

import pytest

from evidence.atif import encode_trajectory, json_equal, loads_strict
from evidence.atif.strict_json import check_json_value, may_hold_surrogate
from evidence.errors import AtifExportError


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("NaN", "non-JSON numeric constant 'NaN'"),
        ("[-Infinity]", "non-JSON numeric constant '-Infinity'"),
        ("1e400", "JSON number '1e400' exceeds the finite float range"),
        ("1e-999", "JSON number '1e-999' underflows the finite float range"),
        ("0.10000000000000001", "JSON number '0.10000000000000001' cannot be represented without precision loss"),
        ('{"a": 1, "a": 2}', "duplicate object key 'a'"),
    ],
)
def test_loader_refuses_lossy_json(text: str, detail: str) -> None:
    with pytest.raises(ValueError, match="^" + detail.replace("(", r"\(").replace(")", r"\)") + "$"):
        loads_strict(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [("2.50", 2.5), ("1E3", 1000.0), ("1.5E-7", 1.5e-7), ("0e-5", 0.0), ("-0.0", -0.0), ("10" * 15, int("10" * 15))],
)
def test_loader_accepts_exact_literals(text: str, value: object) -> None:
    loaded = loads_strict(text)
    assert loaded == value
    assert type(loaded) is type(value)


def test_surrogate_paths_name_values_and_keys() -> None:
    with pytest.raises(AtifExportError, match=r"^rollout\.a\[1\]\.b: contains an unpaired"):
        check_json_value({"a": [0, {"b": "x\ud800"}]}, "rollout")
    with pytest.raises(AtifExportError, match=r"^rollout\.a\.<key>: contains an unpaired"):
        check_json_value({"a": {"\udfff": 1}}, "rollout")
    check_json_value({"a": ["ok 🙂", 1, 2.5, None, True]}, "rollout")


@pytest.mark.parametrize(
    ("value", "detail"),
    [
        (float("nan"), "non-finite numbers are not valid JSON"),
        ({1: 2}, "JSON object keys must be strings"),
        ((1,), "tuple is not a JSON value"),
    ],
)
def test_api_only_hygiene_rules(value: object, detail: str) -> None:
    with pytest.raises(AtifExportError) as raised:
        check_json_value({"v": value}, "rollout")
    assert raised.value.message == f"rollout.v: {detail}"


def test_surrogate_prefilter_never_misses_an_escape() -> None:
    assert may_hold_surrogate(b'{"a": "\\ud800"}')
    assert may_hold_surrogate(b'{"a": "\\uDFFF"}')
    assert not may_hold_surrogate('{"a": "\\u00e9 \U0001f642"}'.encode())


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (0, False, False),
        (None, [], False),
        ({"a": [1, "x"], "b": None}, {"b": None, "a": [1.0, "x"]}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        (["1"], [1], False),
    ],
)
def test_typed_json_equality(left: object, right: object, equal: bool) -> None:
    assert json_equal(left, right) is equal
    assert json_equal(right, left) is equal


def test_encoding_follows_pydantic_core() -> None:
    document = {"f": [1e-5, 1.5e-7, 1e16, 1e22, -0.0, 100.0], "i": 10**30, "s": 'é\u2028\x01\x7f/"', "e": [], "o": {}}
    assert encode_trajectory(document).decode() == (
        "{\n"
        '  "f": [\n    0.00001,\n    1.5e-7,\n    1e+16,\n    1e+22,\n    -0.0,\n    100.0\n  ],\n'
        '  "i": 1000000000000000000000000000000,\n'
        '  "s": "é\u2028\\u0001\x7f/\\"",\n'
        '  "e": [],\n'
        '  "o": {}\n'
        "}\n"
    )
