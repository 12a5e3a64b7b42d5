"""A hostile generated job completes; every planted bad input is reported; inputs are untouched.

Row-level damage is named in manifest.json (skipped lines, rejected attempts with a reason,
notes on attempts without a capture id, duplicates and capture gaps, orphans, repairs);
capture-level damage is also evidence inside the row, as 0.7.0 records it
(``ng_model_call_capture.gaps``, health findings) — see tests/jobgen.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.flows.support import local_path, run_stage, tree_digest
from tests.jobgen import JobInfo, PlantedInput, generate_job

pytestmark = pytest.mark.usefixtures("prefect_server")

SOURCES = {"rollouts.jsonl": "main", "rollouts_failures.jsonl": "failures"}


class Evidence:
    """What one run says, indexed for the checks below."""

    def __init__(self, run: Path) -> None:
        self.manifest = json.loads((run / "manifest.json").read_text())
        self.attempts = {a["key"]: a for a in self.manifest["attempts"]}
        self.skipped = {(s["source"], s["line"]) for s in self.manifest["skipped_lines"]}
        main = [a for a in self.manifest["attempts"] if a["source"] == "main"]
        lines = (run / "rollouts.jsonl").read_bytes().splitlines()
        self.rows = {a["key"]: json.loads(line) for a, line in zip(main, lines, strict=True)}
        self.findings: dict[str, set[str]] = {}
        for line in (run / "health/rollout_verdicts.jsonl").read_text().splitlines():
            verdict = json.loads(line)
            self.findings.setdefault(verdict["rollout_id"], set()).update(f["check"] for f in verdict["findings"])

    def attempt(self, p: PlantedInput) -> dict[str, Any]:
        return self.attempts[f"{SOURCES[p.path]}:{p.line}"]

    def gaps_of(self, rollout_id: str | None) -> set[str]:
        codes: set[str] = set()
        for key, row in self.rows.items():
            if self.attempts[key]["rollout_id"] == rollout_id:
                capture = row.get("ng_model_call_capture") or {}
                codes |= {g["code"] for g in capture.get("gaps", []) if isinstance(g, dict)}
        return codes


def _skipped(e: Evidence, p: PlantedInput) -> bool:
    return (SOURCES[p.path], p.line) in e.skipped


def _rejected(e: Evidence, p: PlantedInput) -> bool:
    attempt = e.attempt(p)
    return attempt["status"] == "rejected" and bool(attempt["reason"])


def _unreadable(e: Evidence, p: PlantedInput) -> bool:
    return "model_call_capture_records_unreadable" in e.gaps_of(p.rollout_id)


def _noted(text: str) -> Callable[[Evidence, PlantedInput], bool]:
    """The attempt's manifest entry names the problem (so the manifest alone lists every bad input)."""
    return lambda e, p: any(text in note for note in e.attempt(p).get("notes", []))


def _processed(e: Evidence, p: PlantedInput) -> bool:
    return any(a["rollout_id"] == p.rollout_id and a["status"] == "ok" for a in e.attempts.values())


CHECKS: dict[str, Callable[[Evidence, PlantedInput], bool]] = {
    "invalid_utf8_line": _skipped,
    "malformed_json_line": _skipped,
    "non_object_line": _skipped,
    "blank_line": lambda e, p: not _skipped(e, p) and f"main:{p.line}" not in e.attempts,
    "invalid_identity": _rejected,
    "path_traversal_id": _rejected,
    "missing_identity": lambda e, p: e.attempt(p)["rollout_id"] is None and _noted("no capture rollout id")(e, p),
    "duplicate_identity": lambda e, p: (
        "rollout_duplicate_identity" in e.findings.get(p.rollout_id, set()) and _noted("duplicate rollout id")(e, p)
    ),
    "stale_no_records": lambda e, p: e.attempt(p).get("repaired") is True,
    "missing_capture": lambda e, p: (
        "model_call_capture_no_records" in e.gaps_of(p.rollout_id) and _noted("gap model_call_capture_no_records")(e, p)
    ),
    "invalid_observations": lambda e, p: (
        "agent_observation_join_failed" in e.gaps_of(p.rollout_id) and _noted("gap agent_observation_join_failed")(e, p)
    ),
    "failed_attempt": lambda e, p: e.attempt(p)["status"] == "ok",
    "orphan_capture": lambda e, p: Path(p.path).name in e.manifest["orphans"],
    "incomplete_marker": lambda e, p: "model_call_capture_incomplete" in e.gaps_of(p.rollout_id),
    "truncated_capture_line": _unreadable,
    "non_object_capture_line": _unreadable,
    "invalid_utf8_capture_line": _unreadable,
    "bom_capture_line": _unreadable,
    "nan_capture_line": _unreadable,
    "blank_capture_line": _processed,
    "huge_capture_line": _processed,
    "traversal_bait": lambda e, p: not any(a["rollout_id"] == p.rollout_id for a in e.attempts.values()),
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> JobInfo:
    return generate_job(
        tmp_path_factory.mktemp("hostile") / "job", rollouts=24, calls_per_rollout=3, history_bytes=300, mode="hostile", seed=3
    )


def test_hostile_job_completes_and_reports_every_bad_input(hostile: JobInfo, tmp_path: Path) -> None:
    before = tree_digest(str(hostile.root))
    result = run_stage(rollouts=str(hostile.rollouts), capture_dir=str(hostile.capture_dir), output=str(tmp_path))
    run = local_path(result["run_dir"])
    assert tree_digest(str(hostile.root)) == before, "inputs must be byte-identical after a run"
    assert (run / "_SUCCESS").exists()
    assert set(CHECKS) >= {p.kind for p in hostile.planted}, "a planted kind without a check"
    missed = [p for p in hostile.planted if not CHECKS[p.kind](Evidence(run), p)]
    assert missed == []
    manifest = Evidence(run).manifest
    assert manifest["counts"]["attempts"] == hostile.main_rows + hostile.failure_rows
    assert manifest["counts"]["rows"] == {"main": hostile.main_rows, "failures": hostile.failure_rows}
