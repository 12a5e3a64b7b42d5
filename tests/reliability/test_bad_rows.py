"""No row can fail a run: the seven shapes that once did (issue 13) go through the real CLI.

One run of the example job with every shape planted: it exits 0 and publishes; each planted
attempt is listed with its status and reason; the example's own rows come out exactly as in a
clean run; values no fold can use are listed, wide sums are written exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLE_JOB
from tests.reliability.bad_rows import SHAPES, U64_MAX, Shape, bad_job
from tests.reliability.support import run_cli, run_dir

EXAMPLE_ROWS = sum(1 for line in (EXAMPLE_JOB / "rollouts.jsonl").read_bytes().splitlines() if line.strip())


def _run(api_url: str, rollouts: Path, capture_dir: Path, output: Path) -> Path:
    args = ["--rollouts", str(rollouts), "--capture-dir", str(capture_dir), "--output", str(output), "--run-id", "r"]
    result = run_cli(api_url, [*args, "--task-runner", "thread"])
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir(output, "r")


@pytest.fixture(scope="module")
def runs(prefect_server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("bad-rows")
    clean = _run(prefect_server, EXAMPLE_JOB / "rollouts.jsonl", EXAMPLE_JOB / "model-calls", root / "clean")
    clean_rows = [json.loads(line) for line in (clean / "rollouts.jsonl").read_bytes().splitlines()]
    exported = next(r for r in clean_rows if (r["_ng_task_index"], r["_ng_rollout_index"]) == (0, 0))
    job, where = bad_job(root, exported)
    bad = _run(prefect_server, job / "rollouts.jsonl", job / "model-calls", root / "bad")
    manifest = json.loads((bad / "manifest.json").read_text())
    return {"clean": clean, "bad": bad, "where": where, "manifest": manifest, "attempts": {a["key"]: a for a in manifest["attempts"]}}


def test_the_run_publishes_and_the_other_rows_are_unaffected(runs: dict[str, Any]) -> None:
    bad, clean = runs["bad"], runs["clean"]
    assert (bad / "_SUCCESS").exists()
    assert (
        bad.joinpath("rollouts.jsonl").read_bytes().splitlines()[:EXAMPLE_ROWS]
        == clean.joinpath("rollouts.jsonl").read_bytes().splitlines()
    )
    main = [a for a in runs["manifest"]["attempts"] if a["source"] == "main"]
    assert len(main) == EXAMPLE_ROWS + sum(len(lines) for lines in runs["where"].values())
    for line in (bad / "rollouts.jsonl").read_bytes().splitlines():
        json.loads(line)  # every written line is JSON, however deep or wide


@pytest.mark.parametrize("shape", SHAPES, ids=[shape.name for shape in SHAPES])
def test_each_shape_is_listed_with_its_status_and_reason(runs: dict[str, Any], shape: Shape) -> None:
    for line in runs["where"][shape.name]:
        attempt = runs["attempts"][f"main:{line}"]
        assert attempt["status"] == shape.status, attempt
        assert attempt.get("reason", "") == shape.reason


def test_deep_and_wide_values_are_written_exactly(runs: dict[str, Any]) -> None:
    lines = runs["bad"].joinpath("rollouts.jsonl").read_bytes().splitlines()
    rows = {name: [json.loads(lines[n - 1]) for n in numbers] for name, numbers in runs["where"].items()}
    depth, value = 0, rows["deep_row"][0]["deep"]
    while isinstance(value, list):
        depth, value = depth + 1, value[0]
    assert depth == 500
    capture = rows["wide_usage_sum"][0]["ng_model_call_capture"]
    assert [call["tokens_out"] for call in capture["calls"]] == [U64_MAX, U64_MAX]
    assert capture["metrics"]["tokens_out"] == 2 * U64_MAX  # wider than 64 bits, exact
    assert isinstance(rows["deep_latency"][0]["ng_perf"]["total_latency_ms"], dict)


def test_values_no_fold_can_use_are_listed_and_wide_totals_kept(runs: dict[str, Any]) -> None:
    problems = runs["manifest"]["fold_problems"]
    assert runs["manifest"]["counts"]["fold_problems"] == len(problems)
    assert any(p.startswith("perf_summary: run: num_turns: OverflowError") for p in problems), problems
    perf = json.loads(runs["bad"].joinpath("perf_summary.json").read_text())
    assert perf["run"]["total_prompt_tokens"] >= 2**64  # U64_MAX + 1 + the example's own, exact
    assert "mean_num_turns" not in perf["run"]
    assert "mean_prompt_tokens" in perf["run"]
