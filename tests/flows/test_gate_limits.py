"""The gate's limits as parameters: CLI names, the typed form, what params.json records."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from flows.params.gate import GateError, GateLimits, gate_limits
from flows.params.stage import StageParams


def test_an_empty_gate_is_off_and_records_nothing() -> None:
    assert not GateLimits().active and GateLimits().recorded() == {}
    set_one = gate_limits({"max_failed_share.judge_failed": 0.1})
    assert set_one.active and set_one.recorded() == {"max_failed_share_by_class": {"judge_failed": 0.1}}


@pytest.mark.parametrize(("name", "value", "message"), [
    ("max_bogus", 0.1, "unknown gate limit 'max_bogus'"),
    ("max_lost_share.x", 0.1, "unknown gate limit 'max_lost_share.x'"),
    ("min_observed_share.not_a_check", 0.1, "unknown health check in gate limit 'min_observed_share.not_a_check'"),
    ("min_landed_share", 1.5, "must be a share between 0 and 1, got 1.5"),
    ("max_lost_share", float("nan"), "got nan"),
])
def test_unknown_names_and_values_outside_a_share_are_refused(name: str, value: float, message: str) -> None:
    with pytest.raises(GateError, match=message.replace("(", r"\(").replace(".", r"\.")):
        gate_limits({name: value})


def test_the_typed_parameter_refuses_unknown_checks_and_shares_outside_0_1() -> None:
    with pytest.raises(ValidationError, match="unknown health check"):
        StageParams(rollouts="r.jsonl", capture_dir="c", output="o", gate={"min_observed_share": {"nope": 0.5}})
    with pytest.raises(ValidationError, match="less than or equal to 1"):
        StageParams(rollouts="r.jsonl", capture_dir="c", output="o", gate={"max_lost_share": 2})
    named = GateLimits(max_lost_share=0.1, min_observed_share={"model_call_failed": 0.9}, max_failed_share_by_class={"timeout_exceeded": 0.01}).named()
    assert named == {"max_lost_share": 0.1, "max_failed_share.timeout_exceeded": 0.01, "min_observed_share.model_call_failed": 0.9}
