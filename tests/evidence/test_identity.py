"""Rollout identity rules (collection.md §2), incl. every collect_errors identity case."""

from __future__ import annotations

from typing import Any

import pytest

from evidence.errors import RowRejected
from evidence.identity import capture_rollout_id, check_capture_file_id, trajectory_identity
from tests.conformance.conftest import load_cases

EXPLICIT_MESSAGE = "_ng_rollout_id must be a string of letters, digits, dots, dashes or underscores starting with a letter or digit; got "


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"_ng_task_index": 3, "_ng_rollout_index": 0}, "3-0"),
        ({"_ng_task_index": -1, "_ng_rollout_index": 2, "_ng_attempt_index": 0}, "-1-2"),
        ({"_ng_task_index": 1.0, "_ng_rollout_index": True}, "1.0-True"),
        ({"_ng_task_index": 3, "_ng_rollout_index": 0, "_ng_attempt_index": 2}, "3-0-a2"),
        ({"_ng_task_index": 9, "_ng_rollout_index": 1, "_ng_attempt_index": 1.9}, "9-1-a1"),
        ({"_ng_task_index": 9, "_ng_rollout_index": 1, "_ng_attempt_index": True}, "9-1-a1"),
        ({"_ng_task_index": 9, "_ng_rollout_index": 1, "_ng_attempt_index": -3}, "9-1"),
        ({"_ng_rollout_id": "run.x_5", "_ng_attempt_index": "2"}, "run.x_5-a2"),
        ({"_ng_rollout_id": "step7.0-0", "_ng_task_index": 7, "_ng_rollout_index": 0}, "step7.0-0"),
        ({"_ng_rollout_id": None, "_ng_task_index": 7, "_ng_rollout_index": 0}, "7-0"),
        ({"_ng_task_index": 4, "_ng_rollout_index": None}, None),
        ({"_ng_rollout_index": 0, "_ng_attempt_index": "x"}, None),
        ({}, None),
    ],
)
def test_capture_rollout_id(record: dict[str, Any], expected: str | None) -> None:
    assert capture_rollout_id(record) == expected


@pytest.mark.parametrize(
    ("record", "kind", "message"),
    [
        ({"_ng_rollout_id": "../etc"}, "ValueError", EXPLICIT_MESSAGE + "'../etc'"),
        ({"_ng_rollout_id": 12}, "ValueError", EXPLICIT_MESSAGE + "12"),
        ({"_ng_rollout_id": ""}, "ValueError", EXPLICIT_MESSAGE + "''"),
        (
            {"_ng_task_index": 0, "_ng_rollout_index": 0, "_ng_attempt_index": "1.5"},
            "ValueError",
            "invalid literal for int() with base 10: '1.5'",
        ),
        (
            {"_ng_task_index": 0, "_ng_rollout_index": 0, "_ng_attempt_index": {}},
            "TypeError",
            "int() argument must be a string, a bytes-like object or a real number, not 'dict'",
        ),
        (
            {"_ng_task_index": 0, "_ng_rollout_index": 0, "_ng_attempt_index": float("inf")},
            "OverflowError",
            "cannot convert float infinity to integer",
        ),
    ],
)
def test_capture_rollout_id_rejections(record: dict[str, Any], kind: str, message: str) -> None:
    with pytest.raises(RowRejected) as raised:
        capture_rollout_id(record)
    assert (raised.value.kind, raised.value.message) == (kind, message)


def test_explicit_id_tolerates_one_trailing_newline_but_the_file_check_does_not() -> None:
    rollout_id = capture_rollout_id({"_ng_rollout_id": "abc\n"})
    assert rollout_id == "abc\n"
    with pytest.raises(RowRejected, match=r"Invalid rollout id: 'abc\\n'"):
        check_capture_file_id(rollout_id)


@pytest.mark.parametrize("rollout_id", ["-1-2", ".hidden", "a_b.c-d", "0"])
def test_file_check_accepts_safe_names(rollout_id: str) -> None:
    check_capture_file_id(rollout_id)


@pytest.mark.parametrize("rollout_id", ["", "a b-0", "é-0", "a/b", "٣-0"])
def test_file_check_refuses_unsafe_names(rollout_id: str) -> None:
    with pytest.raises(RowRejected) as raised:
        check_capture_file_id(rollout_id)
    assert raised.value.message == f"Invalid rollout id: {rollout_id!r}"


IDENTITY_ERRORS = [(name, case) for name, case in load_cases("collect_errors") if not name.startswith("09_")]


@pytest.mark.parametrize(("name", "case"), IDENTITY_ERRORS, ids=[name for name, _ in IDENTITY_ERRORS])
def test_collect_errors_identity_rules(name: str, case: dict[str, Any]) -> None:
    expected = (case["expected_error"]["type"], case["expected_error"]["message"])
    with pytest.raises(RowRejected) as raised:
        _check_identity(case["row"])
    assert (raised.value.kind, raised.value.message) == expected


def _check_identity(row: dict[str, Any]) -> None:
    """Both identity rules in turn: the row's rollout id, then that id as a capture file name."""
    rollout_id = capture_rollout_id(row)
    assert rollout_id is not None
    check_capture_file_id(rollout_id)


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"task_id": "t-1", "_ng_task_index": 0, "_ng_rollout_index": 1}, ("t-1", "0-1")),
        ({"task_id": None, "problem_id": 17.0, "_ng_task_index": -1, "_ng_rollout_index": 2}, ("17.0", "-1-2")),
        (
            {"instance_id": {"repo": "octo/widgets", "n": 3}, "_ng_task_index": 9, "_ng_rollout_index": 1, "_ng_attempt_index": 1.9},
            ("{'repo': 'octo/widgets', 'n': 3}", "9-1-a1"),
        ),
        ({"id": "ignored", "_ng_task_index": 4, "_ng_rollout_index": None}, ("4", "4-None")),
        ({"_ng_rollout_id": "run.x", "_ng_task_index": 5}, ("5", "run.x")),
    ],
)
def test_trajectory_identity(row: dict[str, Any], expected: tuple[str, str]) -> None:
    assert trajectory_identity(row) == expected


@pytest.mark.parametrize(
    ("row", "error"),
    [
        ({"_ng_rollout_index": 0}, KeyError),
        ({"task_id": "t", "_ng_task_index": 0}, KeyError),
        ({"_ng_task_index": 0, "_ng_rollout_index": 0, "_ng_attempt_index": "x"}, ValueError),
        ({"_ng_rollout_id": "../etc", "_ng_task_index": 0}, ValueError),
        ({"_ng_task_index": 0, "_ng_rollout_index": 0, "_ng_attempt_index": []}, TypeError),
    ],
)
def test_trajectory_identity_raises_0_7_0_builtin_classes(row: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error) as raised:
        trajectory_identity(row)
    assert type(raised.value) is error
