"""Batch and per-rollout rules beyond the golden cases: line splitting, keys, API-only texts."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from evidence.atif import (
    MULTIPLE_AGENTS_MESSAGE,
    NO_RECORDS_MESSAGE,
    FirstKeyWins,
    config_error_message,
    duplicate_key_message,
    export_rollouts,
    rollout_to_atif,
    success_lines,
)
from evidence.errors import AtifExportError
from evidence.models.atif import Exporter
from tests.conformance.conftest import load_cases
from tests.evidence.atif.test_samples import content, export_line

EXPORTER = Exporter(name="evidence-stage", version="0.0.0")
IDENTITY: dict[str, Any] = {"session_id": "s", "agent_version": "1", "exporter": EXPORTER}
CANONICAL = json.loads(dict(load_cases("atif"))["01_canonical_two_turn_tools_reasoning"]["rollouts_jsonl"])


def _row(task: int = 3, rollout: int = 7, **changes: Any) -> dict[str, Any]:
    row = copy.deepcopy(CANONICAL)
    row.update({"_ng_task_index": task, "_ng_rollout_index": rollout, **changes})
    return row


def _jsonl(*rows: dict[str, Any]) -> bytes:
    return b"\n".join(json.dumps(row).encode() for row in rows)


def _refusal(data: bytes) -> str:
    with pytest.raises(AtifExportError) as raised:
        export_rollouts(data, **IDENTITY)
    return raised.value.message


def test_final_newline_ends_the_last_row_and_crlf_is_harmless() -> None:
    data = _jsonl(_row(1, 0), _row(2, 0)).replace(b"\n", b"\r\n") + b"\n"
    assert [name for name, _ in export_rollouts(data, **IDENTITY)] == ["1-0.json", "2-0.json", "manifest.jsonl"]


def test_a_second_newline_is_a_blank_row() -> None:
    assert _refusal(_jsonl(_row()) + b"\n\n") == "ATIF export rejected 1 row(s):\n- line 2: blank JSONL records are not supported"


def test_empty_file_has_no_records() -> None:
    assert _refusal(b"") == NO_RECORDS_MESSAGE


def test_key_of_a_refused_row_is_still_taken() -> None:
    broken = _row(5, 1, ng_trajectory=None)
    message = _refusal(_jsonl(broken, _row(5, 1)))
    assert message.splitlines()[1:] == [
        "- line 1: ng_trajectory: missing or invalid v1.0 trajectory",
        f"- line 2: {duplicate_key_message((5, 1))}",
    ]
    assert duplicate_key_message((5, 1)) == "duplicate Gym rollout key (5, 1)"


def test_environment_stamp_counts_as_an_agent_name() -> None:
    stamped = _row(1, 0, agent_ref=None, _ng_environment_server="other_agent")
    assert _refusal(_jsonl(_row(), stamped)) == MULTIPLE_AGENTS_MESSAGE


@pytest.mark.parametrize("agent_ref", ["simple_agent", [1]])
def test_non_object_agent_ref_is_refused_not_crashed(agent_ref: Any) -> None:
    message = _refusal(_jsonl(_row(agent_ref=agent_ref)))
    assert message.endswith("line 1: agent_ref: expected a non-empty agent_ref.name or environment server stamp")


def test_absurd_nesting_is_invalid_json() -> None:
    assert _refusal(b"[" * 100_000 + b"]" * 100_000) == "ATIF export rejected 1 row(s):\n- line 1: invalid JSON"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"_ng_task_index": True}, "_ng_task_index: expected a non-negative integer"),
        ({"_ng_rollout_index": -1}, "_ng_rollout_index: expected a non-negative integer"),
    ],
)
def test_api_reports_indices_after_the_trajectory(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(AtifExportError) as raised:
        rollout_to_atif(_row(**changes), **IDENTITY)
    assert raised.value.message == message


@pytest.mark.parametrize("field", ["session_id", "agent_version"])
def test_api_refuses_blank_identity(field: str) -> None:
    with pytest.raises(AtifExportError) as raised:
        rollout_to_atif(_row(), **{**IDENTITY, field: " \t"})
    assert raised.value.message == f"{field}: expected a non-empty string"


def test_conversion_does_not_mutate_the_row() -> None:
    row = _row()
    rollout_to_atif(row, **IDENTITY)
    assert row == _row()


@pytest.mark.parametrize(("line", "message"), [(b"\xef\xbb\xbf{}", "invalid JSON"), (b"[1]", "expected a JSON object")])
def test_per_rollout_line_refusals_have_no_line_prefix(line: bytes, message: str) -> None:
    with pytest.raises(AtifExportError) as raised:
        export_line(line, **IDENTITY)
    assert raised.value.message == message


def test_exporter_identity_is_stamped() -> None:
    rollout = export_line(_jsonl(_row()), **IDENTITY)
    assert json.loads(content(rollout))["extra"]["nemo_gym"]["exporter"] == {"name": "evidence-stage", "version": "0.0.0"}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "invalid configuration: session_id (String should have at least 1 character)."),
        (" \t", "invalid configuration: session_id (Value error, must contain a non-whitespace character)."),
        ("eval 1", None),
    ],
)
def test_config_error_message(value: str, message: str | None) -> None:
    assert config_error_message("session_id", value) == message


def test_success_lines() -> None:
    assert success_lines(2, "/tmp/out") == [
        "Exported 2 ATIF trajectory file(s) to /tmp/out",
        "Manifest: /tmp/out/manifest.jsonl",
    ]


def test_first_key_wins_tells_every_key_apart_however_wide_its_indices() -> None:
    keys = FirstKeyWins()
    wide = 2**64
    distinct = [(0, 0), (1, 0), (0, 1), (0, wide), (0, wide - 1), (1, wide), (wide, 0), (wide + 1, wide * 3)]
    assert [keys.refusal(key) for key in distinct] == [None] * len(distinct)
    assert [keys.refusal(key) for key in distinct] == [duplicate_key_message(key) for key in distinct]
