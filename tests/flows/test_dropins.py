"""The drop-in commands through the real CLI: ``health`` and ``export-atif`` on every golden case."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from evidence.models.atif import Exporter
from flows.cli.main import main
from flows.execution.resolve import package_version
from tests.conformance.conftest import load_cases
from tests.conformance.test_atif_golden import expected_files, expected_outcome

HEALTH = load_cases("health")
ATIF = load_cases("atif")
EXPORTER = Exporter(name="evidence-stage", version=package_version())


@pytest.mark.parametrize(("name", "case"), HEALTH, ids=[n for n, _ in HEALTH])
def test_health_dropin_matches_golden(name: str, case: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rollouts, out = tmp_path / "rollouts.jsonl", tmp_path / "reports"
    rollouts.write_text(case["rollouts_jsonl"], encoding="utf-8")
    ignore = [arg for check in case["ignored_checks"] if check.strip() for arg in ("--ignore-check", check)]  # the CLI refuses empty ids
    assert main(["health", str(rollouts), str(out), *ignore]) == 0
    verdicts = case["expected_rollout_verdicts_jsonl"].replace(json.dumps(case["input_path_used"]), json.dumps(str(rollouts)))
    assert (out / "rollout_verdicts.jsonl").read_text(encoding="utf-8") == verdicts
    assert (out / "quality_summary.json").read_text(encoding="utf-8") == case["expected_quality_summary_text"]
    assert capsys.readouterr().out == case["expected_report_text"].replace(case["output_dir_used"], str(out)) + "\n"


def test_health_dropin_refuses_unknown_check_and_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as unknown:
        main(["health", str(tmp_path / "missing.jsonl"), str(tmp_path), "--ignore-check", "zzz,nope"])
    assert unknown.value.code == 2
    assert "Unknown rollout health check(s): nope, zzz" in capsys.readouterr().err
    with pytest.raises(SystemExit) as missing:
        main(["health", str(tmp_path / "missing.jsonl"), str(tmp_path)])
    assert missing.value.code == 2
    assert "Rollout JSONL not found" in capsys.readouterr().err


def test_health_dropin_quotes_relative_paths_as_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.7.0 quotes the paths it was given through pathlib, relative ones relative."""
    (tmp_path / "rollouts.jsonl").write_text("x\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["health", "./rollouts.jsonl", "./reports/"]) == 0
    verdict = json.loads((tmp_path / "reports" / "rollout_verdicts.jsonl").read_text(encoding="utf-8"))
    assert verdict["findings"][0]["locator"] == {"source_file": "rollouts.jsonl", "line": 1}
    assert capsys.readouterr().out.splitlines()[-1] == "Quality summary: reports/quality_summary.json"
    with pytest.raises(SystemExit):
        main(["health", "./missing.jsonl", "./reports/"])
    assert capsys.readouterr().err.rstrip("\n").endswith("Rollout JSONL not found: missing.jsonl")


def _atif_args(case: dict[str, Any], rollouts: Path, out: Path) -> list[str]:
    return [
        "export-atif",
        "--rollouts",
        str(rollouts),
        "--output-dir",
        str(out),
        "--session-id",
        case["session_id"],
        "--agent-version",
        case["agent_version"],
    ]


@pytest.mark.parametrize(("name", "case"), ATIF, ids=[n for n, _ in ATIF])
def test_export_atif_dropin_matches_golden(name: str, case: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rollouts, out = tmp_path / "rollouts.jsonl", tmp_path / "atif"
    setup = case.get("setup", {})
    if not setup.get("rollouts_file_missing"):
        rollouts.write_text(case["rollouts_jsonl"], encoding="utf-8")
    if setup.get("output_dir_exists"):
        out.mkdir()
        (out / "sentinel").write_text("keep")
    code, message = expected_outcome(case) if "setup" not in case else (1, "Error: " + case["expected_error"])
    message = (
        message.replace("{output_dir}", str(out))
        .replace("{rollouts_path}", str(rollouts))
        .replace("gym eval export", "evidence-stage export-atif")
    )
    try:
        result = main(_atif_args(case, rollouts, out))
    except SystemExit as exit_:
        result = exit_.code
    captured = capsys.readouterr()
    assert result == code
    if code == 0:
        written = {p.name: p.read_bytes() for p in out.iterdir()}
        assert written == expected_files(case, EXPORTER)
        assert captured.out.splitlines()[0].startswith(f"Exported {len(written) - 1} ATIF trajectory file(s) to ")
    else:
        assert message in captured.err
        assert not out.exists() or setup.get("output_dir_exists")
    if setup.get("output_dir_exists"):
        assert [p.name for p in out.iterdir()] == ["sentinel"]


def test_dropin_outputs_get_the_umask_permissions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Folders 0777 and files 0666 less the umask, as any program's (temp files and mkdtemp are owner-only)."""
    name, case = next((n, c) for n, c in ATIF if "setup" not in c and expected_outcome(c)[0] == 0)
    rollouts = tmp_path / "rollouts.jsonl"
    rollouts.write_text(case["rollouts_jsonl"], encoding="utf-8")
    previous = os.umask(0o027)
    try:
        assert main(_atif_args(case, rollouts, tmp_path / "atif")) == 0
        assert main(["health", str(rollouts), str(tmp_path / "reports")]) == 0
    finally:
        os.umask(previous)
    capsys.readouterr()
    assert stat.S_IMODE((tmp_path / "atif").stat().st_mode) == 0o750, name
    for path in [*(tmp_path / "atif").iterdir(), *(tmp_path / "reports").iterdir()]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o640, path.name


def test_every_refusal_of_a_dropin_has_its_one_prefix_and_names_what_failed(tmp_path: Path) -> None:
    """Issue 35: ``health`` printed two prefixes (its parser's, then the CLI's); a read-only output
    named a temp file. Each drop-in keeps 0.7.0's prefix and exit code, which its golden cases pin."""
    from tests.flows.test_operator_edges import _read_only

    _name, case = next((n, c) for n, c in ATIF if "setup" not in c and expected_outcome(c)[0] == 0)
    rollouts, locked = tmp_path / "rollouts.jsonl", tmp_path / "locked"
    rollouts.write_text(case["rollouts_jsonl"], encoding="utf-8")
    locked.mkdir()
    health = _read_only(locked, ["health", str(rollouts), str(locked / "reports")])
    assert health.returncode == 2, health.stderr
    assert health.stderr.count("\n") == 1, health.stderr
    assert health.stderr.startswith(f"evidence-stage health: error: cannot write the reports into {locked}/reports: ")
    atif = _read_only(locked, _atif_args(case, rollouts, locked / "atif"))
    assert atif.returncode == 1, atif.stderr
    assert atif.stderr.count("\n") == 1, atif.stderr
    assert atif.stderr.startswith(f"Error: Output directory cannot be created: {locked}/atif: "), atif.stderr
    assert ".tmp-" not in health.stderr + atif.stderr
    assert f"{locked}/." not in health.stderr + atif.stderr
    assert list(locked.iterdir()) == []


def test_health_says_a_folder_is_not_a_rollouts_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as folder:
        main(["health", str(tmp_path), str(tmp_path / "reports")])
    assert folder.value.code == 2
    assert capsys.readouterr().err == f"evidence-stage health: error: {tmp_path} is a folder, not a rollouts file\n"
