"""Golden ATIF export cases (NeMo Gym 0.7.0 ``gym eval export --format atif``) against our batch.

Our exporter stamps its own identity, so the expected texts are rewritten with it and the
manifest hashes recomputed from the rewritten bytes; everything else must match byte for byte.
``expected_outcome`` gives the CLI result of each case (exit code and printed message) so the
``export-atif`` CLI test can reuse the same table.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from evidence.atif import (
    config_error_message,
    export_rollouts,
    output_exists_message,
    rollouts_not_found_message,
)
from evidence.errors import AtifExportError
from evidence.models.atif import Exporter
from tests.conformance.conftest import load_cases

CASES = load_cases("atif")
EXPORTER = Exporter(name="evidence-stage", version="9.8.7-test")
_REFERENCE_BLOCK = '"exporter": {\n        "name": "nemo-gym",\n        "version": "0.7.0"\n      }'


def _exporter_block(exporter: Exporter) -> str:
    name, version = json.dumps(exporter.name), json.dumps(exporter.version)
    return f'"exporter": {{\n        "name": {name},\n        "version": {version}\n      }}'


def expected_files(case: dict[str, Any], exporter: Exporter) -> dict[str, bytes]:
    """The case's expected output directory as ``exporter`` would write it."""
    files = {}
    for name, text in case["expected_files"].items():
        if name != "manifest.jsonl":
            assert text.count(_REFERENCE_BLOCK) == 1, name
            files[name] = text.replace(_REFERENCE_BLOCK, _exporter_block(exporter)).encode()
    lines = []
    for line in case["expected_files"]["manifest.jsonl"].splitlines():
        entry = json.loads(line)
        entry["expected_sha256"] = hashlib.sha256(files[entry["trajectory_path"]]).hexdigest()
        lines.append(json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n")
    files["manifest.jsonl"] = "".join(lines).encode()
    return files


def expected_outcome(case: dict[str, Any]) -> tuple[int, str]:
    """``(exit code, message)`` of 0.7.0's CLI for a case; placeholders stay in the message.

    0 with an empty message on success; 1 with the ``Error: `` text for an ``AtifExportError``;
    2 with the argparse error text for a configuration error.
    """
    if "expected_files" in case:
        return 0, ""
    if case["error_class"] == "AtifExportError":
        return 1, f"Error: {case['expected_error']}"
    for field in ("session_id", "agent_version"):
        message = config_error_message(field, case[field])
        if message is not None:
            return 2, f"gym eval export: error: {message}"
    raise AssertionError(f"unclassified case {case['description']}")


def _cases(kind: str) -> list[Any]:
    return [pytest.param(case, id=name) for name, case in CASES if kind in case and not case.get("setup")]


def test_every_case_is_covered() -> None:
    covered = len(_cases("expected_files")) + len(_cases("expected_error")) + 2  # + the two IO cases
    assert covered == len(CASES) == 46


@pytest.mark.parametrize("case", _cases("expected_files"))
def test_export_matches_reference_bytes(case: dict[str, Any]) -> None:
    files = export_rollouts(
        case["rollouts_jsonl"].encode(),
        session_id=case["session_id"],
        agent_version=case["agent_version"],
        exporter=EXPORTER,
    )
    assert dict(files) == expected_files(case, EXPORTER)
    manifest_order = [json.loads(line)["trajectory_path"] for line in dict(files)["manifest.jsonl"].splitlines()]
    assert [name for name, _ in files[:-1]] == manifest_order


@pytest.mark.parametrize("case", [p for p in _cases("expected_error") if p.values[0]["error_class"] == "AtifExportError"])
def test_refusal_text_matches_reference(case: dict[str, Any]) -> None:
    with pytest.raises(AtifExportError) as raised:
        export_rollouts(
            case["rollouts_jsonl"].encode(),
            session_id=case["session_id"],
            agent_version=case["agent_version"],
            exporter=EXPORTER,
        )
    assert raised.value.message == case["expected_error"]
    assert expected_outcome(case) == (1, f"Error: {case['expected_error']}")


def test_blank_session_id_is_a_configuration_error() -> None:
    case = dict(CASES)["29_config_blank_session_id"]
    assert "must contain a non-whitespace character" in case["expected_error"]
    assert expected_outcome(case) == (
        2,
        ("gym eval export: error: invalid configuration: session_id (Value error, must contain a non-whitespace character)."),
    )


@pytest.mark.parametrize(
    ("name", "builder", "placeholder"),
    [
        ("27_io_output_path_exists", output_exists_message, "{output_dir}"),
        ("28_io_rollouts_file_missing", rollouts_not_found_message, "{rollouts_path}"),
    ],
)
def test_io_precondition_messages(name: str, builder: Any, placeholder: str) -> None:
    case = dict(CASES)[name]
    assert builder(placeholder) == case["expected_error"]
    assert expected_outcome(case)[0] == 1
