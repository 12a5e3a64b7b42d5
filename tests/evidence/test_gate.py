"""The quality gate: every limit measured, passing and failing; what cannot be measured fails."""

from __future__ import annotations

from typing import Any

from evidence import evaluate_gate, gate_reason

ACCOUNTING: dict[str, Any] = {
    "expected": 48,
    "landed": 40,
    "failed": 3,
    "lost": 6,
    "duplicates": 1,
    "unexpected": 0,
    "failed_by_class": {"agent_request_failed": 2, "judge_failed": 1},
    "expected_unknown": [],
}
COVERAGE = {"evaluated": 33, "unobserved": 7, "ignored": 0}
SUMMARY: dict[str, Any] = {
    "run": {
        "artifacts": {
            "records": 40,
            "coverage": {"model_call_failed": COVERAGE, "record_unreadable": {"evaluated": 0, "unobserved": 0, "ignored": 40}},
        },
        "verdicts": {"healthy": 24, "unhealthy": 9, "unobserved": 7},
    }
}
MEASURED = {
    "min_landed_share": 39 / 48,
    "max_lost_share": 6 / 48,
    "max_failed_share": 3 / 48,
    "max_failed_share.judge_failed": 1 / 48,
    "max_failed_share.timeout_exceeded": 0.0,
    "max_unhealthy_share": 9 / 40,
    "max_unobserved_share": 7 / 40,
    "min_observed_share.model_call_failed": 33 / 40,
}


def _limits(delta: float) -> dict[str, float]:
    """Every limit just past its measured value: ``delta`` > 0 lets each pass, < 0 makes each fail."""
    return {name: value - delta if name.startswith("min_") else max(0.0, value + delta) for name, value in MEASURED.items()}


def test_every_limit_passes_when_the_measure_is_within_it() -> None:
    gate = evaluate_gate(_limits(0.01), ACCOUNTING, SUMMARY)
    assert (gate["passed"], gate["failing"]) == (True, [])
    assert {e["name"]: e["measured"] for e in gate["limits"]} == MEASURED
    assert all(e["passed"] and e["reason"] is None for e in gate["limits"])


def test_every_limit_fails_when_the_measure_is_past_it() -> None:
    limits = _limits(-0.01)
    gate = evaluate_gate(limits, ACCOUNTING, SUMMARY)
    failing = [name for name in MEASURED if name != "max_failed_share.timeout_exceeded"]  # 0.0 cannot be under 0
    assert (gate["passed"], sorted(gate["failing"])) == (False, sorted(failing))
    assert gate_reason(gate).startswith("quality gate failed: min_landed_share 0.8125 (limit 0.8225); max_lost_share 0.125 (limit 0.115)")


def test_a_limit_that_cannot_be_measured_fails_with_why() -> None:
    unknown = {**ACCOUNTING, "expected": None, "expected_unknown": ["b.jsonl"]}
    empty = {
        "run": {
            "artifacts": {"records": 0, "coverage": SUMMARY["run"]["artifacts"]["coverage"]},
            "verdicts": {"unhealthy": 0, "unobserved": 0},
        }
    }
    limits = {"max_lost_share": 1.0, "max_unhealthy_share": 1.0, "min_observed_share.record_unreadable": 0.0}
    gate = evaluate_gate(limits, unknown, empty)
    assert [(e["name"], e["measured"], e["passed"], e["reason"]) for e in gate["limits"]] == [
        ("max_lost_share", None, False, "expected unknown (no materialized inputs: b.jsonl)"),
        ("max_unhealthy_share", None, False, "no main rows"),
        ("min_observed_share.record_unreadable", None, False, "the check was ignored or had nothing to check"),
    ]
    assert gate_reason(gate).startswith("quality gate failed: max_lost_share: expected unknown")


# ---- the score limits, measured on scores.json (numbers in the metrics' units, not shares)


def _metric(raw: float | None, clean: float | None) -> dict[str, Any]:
    both = raw is not None and clean is not None
    return {"raw": raw, "clean": clean, "difference": clean - raw if both else None, "raw_ci95": None, "clean_ci95": None}  # type: ignore[operator]


SCORES: dict[str, Any] = {
    "groups": {
        "math": {
            "agent": "a",
            "masked_rollouts": {"raw": 0, "clean": 2},
            "metrics": {"mean/reward": _metric(0.5, 0.625), "mean/input_tokens": _metric(1200.0, 1100.0)},
        },
        "code": {"agent": "b", "masked_rollouts": {"raw": 0, "clean": 1}, "metrics": {"mean/reward": _metric(0.75, 0.7)}},
    }
}


def test_score_limits_pass_within_and_fail_past_the_measure() -> None:
    passing = {
        "max_score_shift": 100.0,
        "max_score_shift.mean/reward": 0.125,
        "min_key_metric.mean/reward": 0.625,
        "min_key_metric.mean/input_tokens": -5.0,
    }
    gate = evaluate_gate(passing, ACCOUNTING, SUMMARY, SCORES)
    assert (gate["passed"], gate["failing"]) == (True, [])
    assert {e["name"]: e["measured"] for e in gate["limits"]} == {
        "max_score_shift": 100.0,  # mean/input_tokens in math moved by 100 tokens
        "max_score_shift.mean/reward": 0.125,  # math: 0.5 -> 0.625
        "min_key_metric.mean/reward": 0.625,  # the least clean reward, math's (code's is 0.7)
        "min_key_metric.mean/input_tokens": 1100.0,
    }
    failing = {"max_score_shift": 99.0, "max_score_shift.mean/reward": 0.1, "min_key_metric.mean/reward": 0.65}
    gate = evaluate_gate(failing, ACCOUNTING, SUMMARY, SCORES)
    assert (gate["passed"], gate["failing"]) == (False, list(failing))
    assert [e["reason"] for e in gate["limits"]] == [
        "above the limit (math mean/input_tokens)",
        "above the limit (math mean/reward)",
        "below the limit (math mean/reward)",
    ]
    assert gate_reason(gate) == (
        "quality gate failed: max_score_shift 100 (limit 99); max_score_shift.mean/reward 0.125 (limit 0.1); "
        "min_key_metric.mean/reward 0.625 (limit 0.65)"
    )


def test_a_score_limit_that_cannot_be_measured_fails_with_why() -> None:
    masked = {
        "groups": {
            **SCORES["groups"],
            "agentic": {"agent": "c", "masked_rollouts": {"raw": 0, "clean": 4}, "metrics": {"mean/reward": _metric(0.5, None)}},
        }
    }
    limits = {"max_score_shift.mean/reward": 1.0, "min_key_metric.mean/reward": 0.0, "min_key_metric.mean/resolved": 0.0}
    gate = evaluate_gate(limits, ACCOUNTING, SUMMARY, masked)
    assert [(e["name"], e["measured"], e["passed"], e["reason"]) for e in gate["limits"]] == [
        (
            "max_score_shift.mean/reward",
            None,
            False,
            "no clean - raw for agentic mean/reward (every rollout masked, or the group left out)",
        ),
        ("min_key_metric.mean/reward", None, False, "no clean score for agentic mean/reward (every rollout masked, or the group left out)"),
        ("min_key_metric.mean/resolved", None, False, "no group has the key metric mean/resolved"),
    ]
    without = evaluate_gate({"max_score_shift": 1.0}, ACCOUNTING, SUMMARY)
    assert without["limits"][0]["reason"] == "no scores.json"
    assert (
        evaluate_gate({"max_score_shift": 1.0}, ACCOUNTING, SUMMARY, {"groups": {}})["limits"][0]["reason"] == "no group has a key metric"
    )
