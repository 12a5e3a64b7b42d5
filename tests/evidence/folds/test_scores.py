"""scores.json: raw against clean headline metrics, copied from 0.7.0's two documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from evidence import build_scores, key_metrics, reward_values, score_digest

DATA = Path(__file__).parents[2] / "data" / "aggregate_metrics_0_7_0.json"
GOLDEN = {case["name"]: case for case in orjson.loads(DATA.read_bytes())["cases"]}


def documents(name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    case = GOLDEN[name]
    return orjson.loads(case.get("expected_unmasked", case["expected"])), orjson.loads(case["expected"])


def test_masking_moves_the_scores_and_the_intervals_come_from_agent_metrics() -> None:
    raw, clean = documents("masked_subset")
    scores = build_scores(raw, clean)
    group = scores["groups"]["ag"]
    assert group["agent"] == "ag"
    assert group["masked_rollouts"] == {"raw": 0, "clean": 4}
    assert list(group["metrics"]) == [k for k in raw[0]["key_metrics"] if k.startswith("mean/")]
    reward = group["metrics"]["mean/reward"]
    assert reward["raw"] == raw[0]["key_metrics"]["mean/reward"]
    assert reward["clean"] == clean[0]["key_metrics"]["mean/reward"]
    assert reward["difference"] == reward["clean"] - reward["raw"] != 0
    assert reward["raw_ci95"] == [
        raw[0]["agent_metrics"]["ci_low_95_across_repeats/mean/reward"],
        raw[0]["agent_metrics"]["ci_high_95_across_repeats/mean/reward"],
    ]
    assert reward["clean_ci95"] == [
        clean[0]["agent_metrics"]["ci_low_95_across_repeats/mean/reward"],
        clean[0]["agent_metrics"]["ci_high_95_across_repeats/mean/reward"],
    ]


def test_a_single_repeat_has_no_interval() -> None:
    raw, _ = documents("single_rollouts")
    metric = build_scores(raw, raw)["groups"]["ag"]["metrics"]["mean/reward"]
    assert (metric["raw_ci95"], metric["clean_ci95"], metric["difference"]) == (None, None, 0.0)


def test_a_fully_masked_group_keeps_its_raw_scores_and_counts() -> None:
    raw, clean = documents("masked_everything")
    group = build_scores(raw, clean)["groups"]["ag"]
    assert group["masked_rollouts"] == {"raw": 0, "clean": 4}
    assert all(metric["clean"] is None and metric["difference"] is None for metric in group["metrics"].values())
    assert group["metrics"]["mean/reward"]["raw"] == raw[0]["key_metrics"]["mean/reward"]


@pytest.mark.parametrize("side", ["raw", "clean"])
def test_a_group_left_out_on_one_side_reads_null_there(side: str) -> None:
    present, _ = documents("basic_repeats")
    raw, clean = (present, []) if side == "clean" else ([], present)
    group = build_scores(raw, clean)["groups"]["ag"]
    assert group["masked_rollouts"][side] is None
    assert all(metric[side] is None and metric["difference"] is None for metric in group["metrics"].values())


def test_groups_follow_the_documents_order_and_serialise() -> None:
    raw, clean = documents("servers_and_labels")
    scores = build_scores(raw, clean)
    assert list(scores["groups"]) == [entry["_ng_environment_server"] for entry in raw]
    assert orjson.loads(orjson.dumps(scores)) == scores


def test_key_metrics_are_each_groups_raw_and_clean_scores() -> None:
    raw, clean = documents("masked_everything")
    scores = build_scores(raw, clean)
    metrics = key_metrics(scores)
    assert list(metrics) == ["ag"]
    assert list(metrics["ag"]) == list(scores["groups"]["ag"]["metrics"])
    assert metrics["ag"]["mean/reward"] == {"raw": raw[0]["key_metrics"]["mean/reward"], "clean": None}
    assert key_metrics({}) == {}


def test_reward_values_count_bools_and_leave_out_what_is_not_a_finite_number() -> None:
    rows = [{"reward": 0.5}, {"reward": True}, {"reward": "1"}, {}, {"reward": 10**400}, {"reward": 3}]
    digests = [score_digest({"agent_ref": {"name": "ag"}, **row}) for row in rows]
    assert reward_values(d for d in digests if d is not None) == [0.5, 1.0, 3.0]
