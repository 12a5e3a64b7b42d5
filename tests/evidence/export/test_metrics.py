"""Run metrics and params (``evidence.export``): names, values, and what is left out."""

from __future__ import annotations

from evidence import AttemptEntry, FinishedRun, RunCounts, RunDocuments, RunIdentity, RunRecord, main_identities, run_metrics
from tests.manifests import finished_run

FINISHED = finished_run("job-1", "20260101T000000Z-abcdef", "c" * 64).model_copy(
    update={
        "run": RunIdentity(
            "20260101T000000Z-abcdef", "job-1", "", "full", "0.1.0", "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:02.500000+00:00", False
        ),
        "inputs": FinishedRun.Inputs(fingerprint="i" * 64),
    }
)
COUNTS = RunCounts(5, {}, {}, 0, 0, 0, atif_files=3, atif_rejections=1, verdicts={"healthy": 3, "unhealthy": 1}, fold_problems=0)
NO_COUNTS = RunCounts(0, {}, {}, 0, 0, 0, 0, 0, {}, 0)
ATTEMPTS = [
    AttemptEntry(key="main:1", line=1, source="main", status="ok"),
    AttemptEntry(key="failures:1", line=1, source="failures", status="ok"),
    AttemptEntry(key="main:3", line=3, source="main", status="ok"),
]


def test_metric_names_and_values() -> None:
    documents = RunDocuments(
        counts=COUNTS,
        quality_summary={"run": {"issues": {"model_call_failed": 2, "agent_turn_hollow": 0}}},
        perf_summary={
            "run": {"total_prompt_tokens": 10, "mean_num_turns": 2.5, "median_cached_prompt_tokens": None},
            "groups": {"chat/agent": {"total_prompt_tokens": 4}, "": {"total_prompt_tokens": 6}},
        },
        accounting={"expected": 5, "landed": 4, "lost_keys": [[1, 2]], "shards": {"rs0 chunk:1.jsonl": {"expected": None, "landed": 4}}},
        gate={"passed": False, "limits": {"max_lost_share": {"limit": 0.1, "measured": 0.2, "passed": False}}, "reason": "lost"},
    )
    assert run_metrics(documents) == {
        "verdicts/healthy": 3,
        "verdict_shares/healthy": 0.75,
        "verdicts/unhealthy": 1,
        "verdict_shares/unhealthy": 0.25,
        "findings/model_call_failed": 2,
        "findings/agent_turn_hollow": 0,
        "atif/files": 3,
        "atif/rejections": 1,
        "perf/total_prompt_tokens": 10,
        "perf/mean_num_turns": 2.5,
        "perf_groups/_/total_prompt_tokens": 6,
        "perf_groups/chat_agent/total_prompt_tokens": 4,
        "accounting/expected": 5,
        "accounting/landed": 4,
        "accounting/shards/rs0 chunk_1.jsonl/landed": 4,
        "gate/passed": 0,
        "gate/limits/max_lost_share/limit": 0.1,
        "gate/limits/max_lost_share/measured": 0.2,
        "gate/limits/max_lost_share/passed": 0,
    }


def test_absent_files_give_no_metrics_and_no_verdicts_give_no_shares() -> None:
    assert run_metrics(RunDocuments(counts=NO_COUNTS)) == {"atif/files": 0, "atif/rejections": 0}


def test_run_record_and_trace_identities_come_from_the_manifest() -> None:
    record = RunRecord.from_finished(FINISHED)
    assert record.key == "job-1/20260101T000000Z-abcdef"
    assert (record.started_ms, record.finished_ms) == (1767225600000, 1767225602500)
    assert record.params == {
        "job_id": "job-1",
        "run_id": "20260101T000000Z-abcdef",
        "scope": "full",
        "config_fingerprint": "c" * 64,
        "input_fingerprint": "i" * 64,
        "package_version": "0.1.0",
    }
    assert [i.attempt_key for i in main_identities(record, ATTEMPTS)] == ["main:1", "main:3"]


def test_scores_become_raw_and_clean_metrics_per_group_and_key_metric() -> None:
    scores = {
        "groups": {
            "math/judge": {
                "agent": "a",
                "masked_rollouts": {"raw": 0, "clean": 3},
                "metrics": {
                    "mean/reward": {"raw": 0.5, "clean": 0.625, "difference": 0.125, "raw_ci95": [0.1, 0.9], "clean_ci95": None},
                },
            },
            "agentic": {
                "agent": "b",
                "masked_rollouts": {"raw": 1, "clean": 4},
                "metrics": {
                    "mean/reward": {"raw": 0.25, "clean": None, "difference": None, "raw_ci95": None, "clean_ci95": None},
                },
            },
        }
    }
    metrics = run_metrics(RunDocuments(counts=NO_COUNTS, scores=scores))
    assert {k: v for k, v in metrics.items() if k.startswith("scores/")} == {
        "scores/math_judge/mean/reward/raw": 0.5,
        "scores/math_judge/mean/reward/clean": 0.625,
        "scores/math_judge/masked_rollouts/raw": 0,
        "scores/math_judge/masked_rollouts/clean": 3,
        "scores/agentic/mean/reward/raw": 0.25,  # every rollout masked: no clean metric
        "scores/agentic/masked_rollouts/raw": 1,
        "scores/agentic/masked_rollouts/clean": 4,
    }
