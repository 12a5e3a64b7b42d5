"""Golden health cases (0.7.0 outputs), byte for byte, through both entry points.

1. ``health_check_bytes``: the drop-in over the exact input text.
2. ``evaluate_row`` per parsed line, digests round-tripped through JSON in groups of 1 and of 7
   (as the per-attempt tasks store them), then ``reduce_digests``: grouping must not matter.
3. The stage's reduce: digests folded as they come and spilled to disk, duplicates found by an
   external sort (the fold done again from the spill when an identity repeats) and the verdict
   lines sorted on disk, with sort buffers small enough to need several runs.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

import tasks.storage.spill
from evidence.health import (
    RowDigest,
    digest_lines,
    health_check_bytes,
    normalize_ignored_checks,
    reduce_digests,
)
from tasks.attempts.context import RunContext
from tasks.inputs.shards import Shard
from tasks.reduce.health import HealthOutputs
from tasks.storage import Location
from tasks.storage.concurrent import Documents
from tests.conformance.conftest import load_cases

CASES = load_cases("health")
ROLLOUTS_PATH = "/data/jobs/j1/rollouts.jsonl"
OUTPUT_DIR = "/data/out/j1/health"


def _expected(case: dict[str, Any]) -> tuple[str, str, str]:
    """The case's expected texts with its volatile paths replaced by ours."""
    quoted = json.dumps(case["input_path_used"])
    verdicts = case["expected_rollout_verdicts_jsonl"].replace(quoted, json.dumps(ROLLOUTS_PATH))
    report = case["expected_report_text"].replace(case["output_dir_used"], OUTPUT_DIR)
    return case["expected_quality_summary_text"], verdicts, report


@pytest.mark.parametrize(("name", "case"), CASES, ids=[name for name, _ in CASES])
def test_drop_in_matches_golden_bytes(name: str, case: dict[str, Any]) -> None:
    files = health_check_bytes(
        case["rollouts_jsonl"].encode(),
        rollouts_path=ROLLOUTS_PATH,
        output_dir=OUTPUT_DIR,
        ignored=case["ignored_checks"],
    )
    summary, verdicts, report = _expected(case)
    assert files.rollout_verdicts == verdicts
    assert files.quality_summary == summary
    assert json.loads(files.quality_summary) == case["expected_quality_summary"]
    assert files.report == report


@pytest.mark.parametrize("group_size", [1, 7])
@pytest.mark.parametrize(("name", "case"), CASES, ids=[name for name, _ in CASES])
def test_grouped_digests_match_golden_bytes(name: str, case: dict[str, Any], group_size: int) -> None:
    ignored = normalize_ignored_checks(case["ignored_checks"])
    digests = list(digest_lines(case["rollouts_jsonl"].encode(), source=ROLLOUTS_PATH, ignored=ignored))
    groups = [digests[i : i + group_size] for i in range(0, len(digests), group_size)]
    stored = [json.dumps([digest.to_json() for digest in group]) for group in groups]
    restored = [RowDigest.from_json(item) for text in stored for item in json.loads(text)]
    result = reduce_digests(restored, ignored)
    summary, verdicts, _ = _expected(case)
    assert "".join(result.verdict_lines()) == verdicts
    assert result.summary_text() == summary


SAMPLES = Path(__file__).parents[1] / "data" / "samples"


@pytest.mark.parametrize("job", ["realistic_job", "hostile_job"])
def test_sample_jobs_health_reports(job: str) -> None:
    """0.7.0's reports over each sample job's enriched main rows, byte for byte."""
    expected = SAMPLES / f"{job}.expected"
    files = health_check_bytes((expected / "rollouts.jsonl").read_bytes(), rollouts_path="rollouts.jsonl", output_dir="health")
    assert files.quality_summary == (expected / "health" / "quality_summary.json").read_text(encoding="utf-8")
    assert files.rollout_verdicts == (expected / "health" / "rollout_verdicts.jsonl").read_text(encoding="utf-8")


@pytest.mark.parametrize(("name", "case"), CASES, ids=[name for name, _ in CASES])
def test_stage_reduce_matches_golden_bytes(name: str, case: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tasks.storage.spill, "SORT_BUFFER", 2)
    ignored = normalize_ignored_checks(case["ignored_checks"])
    ctx = RunContext(
        run_dir=Location(str(tmp_path)),
        job_id="job",
        run_id="run",
        shards=(Shard(Location(ROLLOUTS_PATH)),),
        capture_dir=Location("/c"),
        session_id="s",
        agent_version="1",
        exporter_version="0",
        ignored_checks=ignored,
        masked_verdicts=(),
    )
    with ExitStack() as stack:
        health = HealthOutputs(ctx, stack)
        for digest in digest_lines(case["rollouts_jsonl"].encode(), source=ROLLOUTS_PATH, ignored=ignored):
            health.add(RowDigest.from_json(json.loads(json.dumps(digest.to_json()))))
        with Documents(remote=False) as documents:
            health.finish(documents)
    summary, verdicts, _ = _expected(case)
    assert (tmp_path / "health" / "rollout_verdicts.jsonl").read_text(encoding="utf-8") == verdicts
    assert (tmp_path / "health" / "quality_summary.json").read_text(encoding="utf-8") == summary
