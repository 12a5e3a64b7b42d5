"""The sample jobs: every enriched main row converts exactly as 0.7.0's per-rollout conversion.

``atif_rows.jsonl`` holds, per row, 0.7.0's trajectory (exporter block aside) or its refusal.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from evidence.atif import AtifFile, AtifRefusal, atif_of_line
from evidence.atif.convert import AtifIdentity
from evidence.errors import AtifExportError
from evidence.models.atif import Exporter
from tests.conformance.conftest import strict_diff

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"
EXPORTER = Exporter(name="evidence-stage", version="9.8.7-test")
REFERENCE_EXPORTER = {"name": "nemo-gym", "version": "0.7.0"}


def export_line(line: bytes, *, session_id: str, agent_version: str, exporter: Exporter) -> AtifFile:
    """One line's ATIF file, or its refusal raised (as the per-rollout export refuses it)."""
    atif = atif_of_line(line, AtifIdentity(session_id=session_id, agent_version=agent_version, exporter=exporter))
    if isinstance(atif, AtifRefusal):
        raise AtifExportError(atif.message)
    return atif


def content(file: AtifFile) -> bytes:
    return b"".join(file.chunks())


def sample_rows(job: str) -> list[tuple[bytes, dict[str, Any]]]:
    """``(enriched row line, 0.7.0 result)`` pairs of a sample job, in file order."""
    expected_dir = SAMPLES / f"{job}.expected"
    lines = [line for line in (expected_dir / "rollouts.jsonl").read_bytes().split(b"\n") if line.strip()]
    results = [json.loads(line) for line in (expected_dir / "atif_rows.jsonl").read_text("utf-8").splitlines()]
    assert len(lines) == len(results)
    return list(zip(lines, results, strict=False))


def _result(line: bytes) -> dict[str, Any]:
    try:
        rollout = export_line(line, session_id="sample", agent_version="1.0.0", exporter=EXPORTER)
    except AtifExportError as error:
        return {"ok": False, "error": f"AtifExportError: {error.message}"}
    atif = json.loads(content(rollout))
    assert atif["extra"]["nemo_gym"]["exporter"] == EXPORTER.model_dump()
    atif["extra"]["nemo_gym"]["exporter"] = REFERENCE_EXPORTER
    assert (
        rollout.name == f"{atif['extra']['nemo_gym']['source']['task_index']}-{atif['extra']['nemo_gym']['source']['rollout_index']}.json"
    )
    return {"ok": True, "atif": atif}


@pytest.mark.parametrize("job", ["realistic_job", "hostile_job"])
def test_sample_rows_convert_like_reference(job: str) -> None:
    rows = sample_rows(job)
    outcomes = {True: 0, False: 0}
    for number, (line, expected) in enumerate(rows, start=1):
        diff = strict_diff(_result(line), expected)
        assert diff is None, f"row {number}: {diff}"
        outcomes[expected["ok"]] += 1
    assert outcomes[True]
    assert outcomes[False]


def test_manifest_line_pins_the_file_bytes() -> None:
    line = next(line for line, expected in sample_rows("realistic_job") if expected["ok"])
    rollout = export_line(line, session_id="sample", agent_version="1.0.0", exporter=EXPORTER)
    entry = json.loads(rollout.manifest_line)
    assert list(entry) == ["_ng_rollout_index", "_ng_task_index", "expected_sha256", "trajectory_path"]
    assert entry["expected_sha256"] == hashlib.sha256(content(rollout)).hexdigest()
    assert entry["trajectory_path"] == rollout.name
    assert (entry["_ng_task_index"], entry["_ng_rollout_index"]) == rollout.key
    assert b" " not in rollout.manifest_line
