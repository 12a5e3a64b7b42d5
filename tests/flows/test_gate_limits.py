"""The gate's limits as parameters: CLI names, the typed form, what params.json records."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from flows.params.gate import GateError, GateLimits, gate_limits
from flows.params.stage import StageParams


def test_an_empty_gate_is_off_and_records_nothing() -> None:
    assert not GateLimits().active
    assert GateLimits().recorded() == {}
    set_one = gate_limits({"max_failed_share.judge_failed": 0.1})
    assert set_one.active
    assert set_one.recorded() == {"max_failed_share_by_class": {"judge_failed": 0.1}}


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("max_bogus", 0.1, "unknown gate limit 'max_bogus'"),
        ("max_lost_share.x", 0.1, "unknown gate limit 'max_lost_share.x'"),
        ("min_observed_share.not_a_check", 0.1, "unknown health check in gate limit 'min_observed_share.not_a_check'"),
        ("min_landed_share", 1.5, "must be a share between 0 and 1, got 1.5"),
        ("max_lost_share", float("nan"), "got nan"),
    ],
)
def test_unknown_names_and_values_outside_a_share_are_refused(name: str, value: float, message: str) -> None:
    with pytest.raises(GateError, match=message.replace("(", r"\(").replace(".", r"\.")):
        gate_limits({name: value})


def test_the_typed_parameter_refuses_unknown_checks_and_shares_outside_0_1() -> None:
    with pytest.raises(ValidationError, match="unknown health check"):
        StageParams(rollouts="r.jsonl", capture_dir="c", output="o", gate={"min_observed_share": {"nope": 0.5}})
    with pytest.raises(ValidationError, match="less than or equal to 1"):
        StageParams(rollouts="r.jsonl", capture_dir="c", output="o", gate={"max_lost_share": 2})
    named = GateLimits(
        max_lost_share=0.1, min_observed_share={"model_call_failed": 0.9}, max_failed_share_by_class={"timeout_exceeded": 0.01}
    ).named()
    assert named == {"max_lost_share": 0.1, "max_failed_share.timeout_exceeded": 0.01, "min_observed_share.model_call_failed": 0.9}


def test_score_limits_take_numbers_in_the_metrics_units_and_name_key_metrics() -> None:
    limits = gate_limits(
        {
            "max_score_shift": 25.0,
            "max_score_shift.mean/reward": 0.02,
            "min_key_metric.mean/reward": 0.5,
            "min_key_metric.mean/margin": -3.5,
        }
    )
    assert limits.named() == {
        "max_score_shift": 25.0,
        "max_score_shift.mean/reward": 0.02,
        "min_key_metric.mean/reward": 0.5,
        "min_key_metric.mean/margin": -3.5,
    }
    assert limits.recorded() == {
        "max_score_shift": 25.0,
        "max_score_shift_by_metric": {"mean/reward": 0.02},
        "min_key_metric": {"mean/reward": 0.5, "mean/margin": -3.5},
    }
    assert GateLimits.model_validate(limits.recorded()) == limits  # params.json reads back the same gate


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("max_score_shift", -0.1, "gate limit max_score_shift must be a non-negative number, got -0.1"),
        ("max_score_shift.mean/reward", float("nan"), "must be a non-negative number, got nan"),
        ("min_key_metric.mean/reward", float("inf"), "must be a finite number (in the metric's unit, not a share), got inf"),
        ("min_key_metric", 0.5, "gate limit 'min_key_metric' names no key metric"),
        ("min_key_metric.reward", 0.5, "gate limit 'min_key_metric.reward' names no key metric: key metrics are the mean/<field> names"),
        ("max_score_shift.mean/", 0.5, "names no key metric"),
    ],
)
def test_score_limits_refuse_negative_shifts_non_numbers_and_other_metric_names(name: str, value: float, message: str) -> None:
    with pytest.raises(GateError, match=re.escape(message)):
        gate_limits({name: value})


def test_the_typed_score_limits_refuse_what_the_cli_refuses() -> None:
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        StageParams(rollouts="r.jsonl", capture_dir="c", output="o", gate={"max_score_shift": -1})
    with pytest.raises(ValidationError, match="not a key metric"):
        StageParams(rollouts="r.jsonl", capture_dir="c", output="o", gate={"min_key_metric": {"reward": 0.5}})
    assert (
        StageParams(rollouts="r.jsonl", capture_dir="c", output="o", gate={"max_score_shift": ""}).gate.max_score_shift is None
    )  # a blank form field
