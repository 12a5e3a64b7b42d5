"""The CLI's summary after a run (``flows.cli.console.print_summary``): counts, then the scores."""

from __future__ import annotations

import pytest

from flows.cli.console import print_summary

COUNTS = {
    "by_status": {"ok": 3},
    "rows": {"main": 3},
    "verdicts": {"healthy": 2, "unhealthy": 1},
    "atif_files": 3,
    "atif_rejections": 0,
    "orphans": 0,
    "skipped_lines": 0,
    "repairs": 0,
}


def test_the_summary_shows_each_groups_key_metrics_raw_and_clean(capsys: pytest.CaptureFixture[str]) -> None:
    scores = {
        "math_with_judge": {
            "mean/reward": {"raw": 0.5, "clean": 0.6666666666666666},
            "mean/input_tokens": {"raw": 1163.5, "clean": 1200.25},
        },
        "claude_code_agent": {"mean/reward": {"raw": 0.25, "clean": None}},
    }
    print_summary({"run_id": "r1", "run_dir": "file:///out/job/runs/r1", "counts": COUNTS, "scores": scores, "already_complete": False})
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "mean/" in line]
    cells = [[cell.strip() for cell in line.split("\u2502")[1:-1]] for line in lines]
    assert cells == [
        ["math_with_judge", "mean/reward", "0.5", "0.6667"],
        ["", "mean/input_tokens", "1164", "1200"],
        ["claude_code_agent", "mean/reward", "0.25", "n/a"],  # every rollout masked: 0.7.0 wrote no clean score
    ]
    assert "scores: raw against clean" in out
    assert out.rstrip().endswith("outputs: file:///out/job/runs/r1")


def test_a_result_without_scores_prints_the_counts_alone(capsys: pytest.CaptureFixture[str]) -> None:
    print_summary({"run_id": "r1", "run_dir": "file:///out/job/runs/r1", "counts": COUNTS, "already_complete": False})
    out = capsys.readouterr().out
    assert "verdict unhealthy" in out
    assert "scores" not in out
