"""evidence.compare on hand-made evidence: pairing, the bootstrap, trust, status, rendering."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evidence.compare import (
    NO_CHANGE,
    RunEvidence,
    compare_markdown,
    compare_runs,
    comparison_json,
    render_compare,
    rollout_facts,
    verdict_facts,
)
from evidence.compare.bootstrap import paired_bootstrap
from evidence.compare.model import Comparison, Interval
from evidence.compare.pairing import pair_by_key
from tests.bootstrap_reference import reference_interval
from tests.manifests import finished_run

HOSTILE = '<script>alert("x")</script>|&'


def row(task: Any, rollout: Any, *, reward: float = 0.0, agent: str = "agent", model: str = "m1", **extra: Any) -> dict[str, Any]:
    return {
        "_ng_task_index": task,
        "_ng_rollout_index": rollout,
        "reward": reward,
        "agent_ref": {"name": agent},
        "ng_perf": {"prompt_tokens": 100, "completion_tokens": 10, "total_latency_ms": 1000.0},
        "ng_model_call_capture": {"calls": [{"model": model}]},
        **extra,
    }


def evidence(rows: list[dict[str, Any]], **documents: Any) -> RunEvidence:
    verdicts = [
        {"_ng_task_index": r["_ng_task_index"], "_ng_rollout_index": r["_ng_rollout_index"], "verdict": "healthy", "findings": []}
        for r in rows
    ]
    fields: dict[str, Any] = {
        "location": "memory://out/job/runs/r1",
        "manifest": finished_run(),
        "quality_summary": None,
        "perf_summary": {"run": {}, "groups": {"agent": {}}},
        "capabilities": None,
        "gate": None,
        "accounting": None,
        "rollouts": [rollout_facts(r) for r in rows],
        "verdicts": [verdict_facts(v) for v in documents.pop("verdict_lines", verdicts)],
        "atif_accepted": [],
        "atif_rejections": [],
    }
    return RunEvidence(**{**fields, **documents})


def test_pairing_keeps_types_apart_and_pairs_repeated_keys_by_occurrence() -> None:
    a = [rollout_facts(row(1, 0)), rollout_facts(row(1, 0)), rollout_facts(row("1", 0)), rollout_facts(row(2, 0, stage_index=1))]
    b = [rollout_facts(row(1, 0, reward=1.0)), rollout_facts(row(2, 0, stage_index=1)), rollout_facts(row(2, 0))]
    pairs = pair_by_key(a, b)
    assert [(x.label, y.label, y.values["reward"]) for x, y in pairs.paired] == [("1-0", "1-0", 1.0), ("2-0@1", "2-0@1", 0.0)]
    assert [r.label for r in pairs.only_in_a] == ["1-0", "1-0"]  # the second (1, 0) and the string task "1"
    assert pairs.only_in_a[1].key == ('"1"', "0")
    wide = rollout_facts(row(2**70, 0))
    assert (wide.key, wide.label) == ((str(2**70), "0"), f"{2**70}-0")
    assert [r.label for r in pairs.only_in_b] == ["2-0"]
    assert (pairs.repeated_keys_a, pairs.repeated_keys_b) == (1, 0)


def test_an_identity_nested_past_the_encoders_recursion_pairs() -> None:
    """Issue 45: json.dumps of a task index nested 1,000 levels (a row parses to 1,024) raised RecursionError."""
    deep = orjson.loads(b"[" * 1000 + b"0" + b"]" * 1000)
    a, b = [rollout_facts(row(deep, 0)), rollout_facts(row(1, 0))], [rollout_facts(row(deep, 0, reward=1.0))]
    assert a[0].key == ("[" * 1000 + "0" + "]" * 1000, "0")
    pairs = pair_by_key(a, b)
    assert ([x.key for x, _ in pairs.paired], [r.label for r in pairs.only_in_a]) == ([a[0].key], ["1-0"])
    assert verdict_facts({"_ng_task_index": deep, "_ng_rollout_index": 0, "verdict": "healthy"}).key == a[0].key


def test_bootstrap_is_seeded_exact_for_constant_differences_and_bounded_by_task_means() -> None:
    constant = paired_bootstrap({"0": [0.5, 0.5], "1": [0.5], "2": [0.5, 0.5, 0.5]}, seed=3)
    assert (constant.pairs, constant.tasks, constant.delta, constant.low, constant.high) == (6, 3, 0.5, 0.5, 0.5)

    spread = {str(task): [task**1.5, task**0.5] for task in range(10)}
    first, again, other = (paired_bootstrap(spread, seed=s) for s in (7, 7, 8))
    assert first == again
    assert first != other
    assert (first.pairs, first.tasks) == (20, 10)
    assert first.delta == pytest.approx(sum(t**1.5 + t**0.5 for t in range(10)) / 20)
    assert 0.0 < first.low < first.delta < first.high < 27.0
    assert paired_bootstrap({}, seed=0).delta is None


@pytest.mark.parametrize(
    ("differences", "seed", "expected"),
    [
        pytest.param(
            {str(task): [task**1.5, task**0.5] for task in range(10)},
            7,
            Interval(pairs=20, tasks=10, delta=6.517776729655411, low=3.4916758802770302, high=9.417879554924058),
            id="two-pairs-per-task",
        ),
        pytest.param(
            {"t0": [0.0, 1.0, 1.0], "t1": [1.0], "t2": [0.0, 0.0], "t3": [1.0, 1.0, 0.0, 1.0], "t4": [-1.0], "t5": [0.5, 0.5]}
            | {"t6": [0.0], "t7": [1.0, 1.0], "t8": []},
            2026,
            Interval(pairs=16, tasks=8, delta=0.5, low=0.09090909090909091, high=0.75),
            id="uneven-tasks-weighted-by-pairs",
        ),
    ],
)
def test_a_seeded_interval_is_pinned_to_numbers_computed_apart(differences: dict[str, list[float]], seed: int, expected: Interval) -> None:
    """Recorded by hand with tests/bootstrap_reference.py and a vectorised numpy reading (same
    draws, numpy sums and np.quantile), which agreed on low and high to the last bit. At 90 %
    the first would be (4.153080675981811, 9.006998727802685), the second (0.2, 0.7142857142857143)."""
    assert paired_bootstrap(differences, seed=seed) == expected


@settings(max_examples=60, deadline=None)
@given(
    differences=st.dictionaries(
        st.text(max_size=3),
        st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False) | st.integers(-3, 3).map(float), max_size=4),
        max_size=12,
    ),
    seed=st.integers(0, 2**32),
)
def test_the_interval_agrees_with_an_independent_reading_of_its_description(differences: dict[str, list[float]], seed: int) -> None:
    interval = paired_bootstrap(differences, seed=seed)
    assert reference_interval(differences, seed) == {
        "pairs": interval.pairs,
        "tasks": interval.tasks,
        "delta": interval.delta,
        "low": interval.low,
        "high": interval.high,
    }


@pytest.mark.parametrize(
    ("differences", "pairs", "tasks"),
    [({"0": [1e308, 1e308]}, 2, 1), ({"0": [1e308], "1": [1e308]}, 2, 2), ({"0": [float("inf"), float("-inf")]}, 2, 1)],
)
def test_a_bootstrap_whose_sums_leave_the_doubles_has_no_figures(differences: dict[str, list[float]], pairs: int, tasks: int) -> None:
    """Issue 45: B − A of 1e308 latencies made math.fsum raise and failed the comparison."""
    interval = paired_bootstrap(differences, seed=0)
    assert (interval.pairs, interval.tasks, interval.delta, interval.low, interval.high) == (pairs, tasks, None, None, None)


def test_rewards_and_latencies_near_the_largest_double_compare() -> None:
    """Issue 45: a whole comparison over rows whose means and differences overflow a double."""
    a_rows = [row(t, 0, reward=0.0, ng_perf={"total_latency_ms": 0.0}) for t in range(2)]
    b_rows = [row(t, 0, reward=1e308, ng_perf={"total_latency_ms": 1e308}) for t in range(2)]
    comparison = compare_runs(evidence(a_rows), evidence(b_rows))
    group = comparison.groups["agent"]
    assert (group.mean_reward.a, group.mean_reward.b) == (0.0, None)  # fmean of two 1e308: no double
    assert (group.intervals["reward"].pairs, group.intervals["reward"].delta) == (2, None)
    assert (group.intervals["total_latency_ms"].pairs, group.intervals["total_latency_ms"].delta) == (2, None)
    json.loads(comparison_json(comparison))
    compare_markdown(comparison)


def test_identical_evidence_is_no_change_and_trusted() -> None:
    rows = [row(t, r, reward=float(r % 2)) for t in range(3) for r in range(2)]
    comparison = compare_runs(evidence(rows), evidence(rows))
    assert (comparison.status, comparison.changed, comparison.trust.trusted) == (NO_CHANGE, [], True)
    interval = comparison.groups["agent"].intervals["reward"]
    assert (interval.delta, interval.low, interval.high, interval.tasks) == (0.0, 0.0, 0.0, 3)
    assert comparison_json(comparison) == comparison_json(compare_runs(evidence(rows), evidence(rows)))


def test_reward_model_and_pairing_changes_are_named() -> None:
    a_rows = [row(t, r, reward=0.0) for t in range(2) for r in range(2)]
    b_rows = [row(t, r, reward=1.0, model="m2") for t in range(2) for r in range(2)][:-1]
    comparison = compare_runs(evidence(a_rows), evidence(b_rows))
    assert comparison.changed == ["pairing", "rewards", "models"]
    group = comparison.groups["agent"]
    assert (group.rollouts.a, group.rollouts.b, group.rollouts.delta, group.paired, group.rewards_changed) == (4, 3, -1, 3, 3)
    assert (group.mean_reward.a, group.mean_reward.b, group.mean_reward.delta) == (0.0, 1.0, 1.0)
    assert group.models == {"a": ["m1"], "b": ["m2"]}
    assert (comparison.pairing.only_in_a, comparison.pairing.only_in_a_rollouts) == (1, ["1-1"])


def _flipped_health() -> Comparison:
    """Two rollouts whose verdicts and checks flip between A and B, and a task flag B adds."""
    rows = [row(0, 0), row(0, 1)]
    lines_a = [
        {"_ng_task_index": 0, "_ng_rollout_index": 0, "verdict": "healthy", "findings": []},
        {"_ng_task_index": 0, "_ng_rollout_index": 1, "verdict": "unhealthy", "findings": [{"check": "model_call_failed"}]},
    ]
    lines_b = [
        {"_ng_task_index": 0, "_ng_rollout_index": 0, "verdict": "unhealthy", "findings": [{"check": "agent_turn_hollow"}]},
        {"_ng_task_index": 0, "_ng_rollout_index": 1, "verdict": "unobserved", "findings": []},
    ]
    summary_a = {"run": {"ignored_checks": [], "issues": {"agent_turn_hollow": 0, "model_call_failed": 1}}, "tasks": {"0": {"flags": []}}}
    summary_b = {
        "run": {"ignored_checks": ["rollout_token_count_mismatch"], "issues": {"agent_turn_hollow": 1, "model_call_failed": 0}},
        "tasks": {"0": {"flags": ["task_consistently_unhealthy"]}},
    }
    summary_b["run"]["issues"]["task_consistently_unhealthy"] = 1
    return compare_runs(
        evidence(rows, verdict_lines=lines_a, quality_summary=summary_a), evidence(rows, verdict_lines=lines_b, quality_summary=summary_b)
    )


def test_health_transitions_and_flips_per_check() -> None:
    health = _flipped_health().health
    assert health.transitions == {
        "healthy": {"healthy": 0, "unhealthy": 1, "unobserved": 0},
        "unhealthy": {"healthy": 0, "unhealthy": 0, "unobserved": 1},
        "unobserved": {"healthy": 0, "unhealthy": 0, "unobserved": 0},
    }
    hollow, failed, task = (health.checks[c] for c in ("agent_turn_hollow", "model_call_failed", "task_consistently_unhealthy"))
    assert (hollow.a, hollow.b, hollow.delta, hollow.flagged_rollouts, hollow.cleared) == (0, 1, 1, ["0-0"], 0)
    assert (failed.delta, failed.flagged, failed.cleared_rollouts) == (-1, 0, ["0-1"])
    assert (task.a, task.b, task.flagged_rollouts) == (None, 1, ["task 0"])
    assert health.ignored_checks == {"a": [], "b": ["rollout_token_count_mismatch"]}


def test_the_markdown_lists_the_flipped_checks_and_how_the_intervals_were_drawn() -> None:
    markdown = compare_markdown(_flipped_health())
    assert (
        "| Check | A | B | \u0394 | Flagged in B | Rollouts | Cleared in B | Rollouts |\n"
        "|---|---|---|---|---|---|---|---|\n"
        "| agent_turn_hollow | 0 | 1 | 1 | 1 | 0-0 | 0 |  |\n"
        "| model_call_failed | 1 | 0 | -1 | 0 |  | 1 | 0-1 |\n"
        "| task_consistently_unhealthy | \u2014 | 1 | \u2014 | 1 | task 0 | 0 |  |\n"
    ) in markdown
    assert markdown.endswith(
        "Intervals: paired bootstrap over tasks, 1000 resamples, seed 0, central 95% of the resampled mean differences (B \u2212 A).\n"
    )


def test_trust_gate_landed_share_capabilities_and_config() -> None:
    rows = [row(0, 0)]
    capabilities = {"agents": {"agent": {"dimensions": {"token_counts": {"status": "full", "complete": 1.0}}}}}
    partial = {"agents": {"agent": {"dimensions": {"token_counts": {"status": "partial", "complete": 0.5}}}}}
    a = evidence(rows, capabilities=capabilities, accounting={"expected": 10, "landed": 10}, gate={"passed": True})
    b = evidence(
        rows,
        capabilities=partial,
        accounting={"expected": 10, "landed": 8},
        gate={"status": "failed"},
        manifest=finished_run(run_id="r2", config_fingerprint="f2", session_id="t"),
    )
    comparison = compare_runs(a, b)
    assert (comparison.a.gate, comparison.b.gate, comparison.a.landed_share, comparison.b.landed_share) == ("passed", "failed", 1.0, 0.8)
    assert not comparison.trust.trusted
    issues = [(i.code, i.side) for i in comparison.trust.issues]
    assert issues == [("gate_failed", "b"), ("landed_share_lower", "b"), ("capability_changed", None), ("config_differs", None)]
    details = [i.detail for i in comparison.trust.issues]
    assert "Token counts went full \u2192 partial" in details[2]
    assert "session_id" in details[3]
    assert evidence(rows).gate is None
    assert compare_runs(evidence(rows), evidence(rows)).a.gate == "unknown"


class _Groups(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.groups: list[str] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if "data-group" in found:
            self.groups.append(found["data-group"] or "")
        self.scripts += tag == "script"


def test_page_and_markdown_name_every_group_and_escape_values() -> None:
    rows = [row(0, 0, agent=HOSTILE), row(1, 0, agent="plain")]
    comparison = compare_runs(evidence(rows), evidence(rows))
    page = render_compare(comparison)
    reader = _Groups()
    reader.feed(page)
    assert reader.groups == ["(whole run)", *sorted(["agent", "plain", HOSTILE])]  # "agent": a perf_summary group
    assert reader.scripts == 0
    assert HOSTILE not in page
    markdown = compare_markdown(comparison)
    assert "### plain" in markdown
    assert "<script>" not in markdown
    assert json.loads(comparison_json(comparison))["status"] == NO_CHANGE


@pytest.mark.parametrize("value", [True, "1", None, 10**400])
def test_rollout_facts_skip_values_that_are_not_finite_numbers(value: Any) -> None:
    assert "reward" not in rollout_facts(row(0, 0, reward=value)).values


# ---- scores: each group's key metrics, raw and clean, paired by (task, rollout)


def scores_doc(raw: float | None, clean: float | None) -> dict[str, Any]:
    return {
        "groups": {
            "agent": {"agent": "agent", "masked_rollouts": {"raw": 0, "clean": 0}, "metrics": {"mean/reward": {"raw": raw, "clean": clean}}}
        }
    }


def verdicts_of(
    rows: list[dict[str, Any]], unhealthy: set[tuple[int, int]] = frozenset(), unobserved: set[tuple[int, int]] = frozenset()
) -> list[dict[str, Any]]:
    def verdict(key: tuple[int, int]) -> str:
        return "unhealthy" if key in unhealthy else "unobserved" if key in unobserved else "healthy"

    return [
        {
            "_ng_task_index": r["_ng_task_index"],
            "_ng_rollout_index": r["_ng_rollout_index"],
            "verdict": verdict((r["_ng_task_index"], r["_ng_rollout_index"])),
            "findings": [],
        }
        for r in rows
    ]


def scored(rows: list[dict[str, Any]], scores: dict[str, Any], **documents: Any) -> RunEvidence:
    return evidence(rows, scores=scores, **documents)


def test_a_score_that_moved_on_every_task_is_a_change_raw_and_clean() -> None:
    a_rows = [row(t, r, reward=0.0) for t in range(6) for r in range(2)]
    b_rows = [row(t, r, reward=1.0 if r == 0 else 0.5) for t in range(6) for r in range(2)]
    comparison = compare_runs(scored(a_rows, scores_doc(0.0, 0.0)), scored(b_rows, scores_doc(0.75, 0.75)))
    entry = comparison.scores["agent"]["mean/reward"]
    for side in (entry.raw, entry.clean):
        assert (side.scores.a, side.scores.b, side.scores.delta) == (0.0, 0.75, 0.75)
        assert (side.paired.pairs, side.paired.tasks, side.paired.delta, side.paired.low, side.paired.high) == (12, 6, 0.75, 0.75, 0.75)
        assert (side.untrusted_pairs, side.change) == (0, True)
    assert comparison.changed[:2] == ["scores", "rewards"]
    document = json.loads(comparison_json(comparison))
    assert document["scores"]["agent"]["mean/reward"]["clean"]["change"] is True
    assert "| agent | mean/reward | clean | 0 | 0.75 | 0.75 | 0.75 [0.75, 0.75] (12 pairs, 6 tasks) | 0 | yes |" in compare_markdown(
        comparison
    )


def test_an_interval_that_holds_zero_is_no_change() -> None:
    a_rows = [row(t, 0, reward=0.5) for t in range(8)]
    b_rows = [row(t, 0, reward=1.0 if t % 2 else 0.0) for t in range(8)]  # half up, half down
    entry = compare_runs(scored(a_rows, scores_doc(0.5, 0.5)), scored(b_rows, scores_doc(0.5, 0.5))).scores["agent"]["mean/reward"]
    assert entry.clean.paired.low < 0 < entry.clean.paired.high
    assert entry.clean.change is False
    assert entry.raw.change is False


def test_untrustworthy_rows_never_make_a_change() -> None:
    a_rows = [row(t, 0, reward=0.0) for t in range(6)]
    b_rows = [row(t, 0, reward=1.0 if t == 5 else 0.0) for t in range(6)]
    # B's one moved rollout is unhealthy: raw sees the move but may not call it, clean leaves it out
    b = scored(b_rows, scores_doc(1 / 6, 0.0), verdict_lines=verdicts_of(b_rows, unhealthy={(5, 0)}))
    entry = compare_runs(scored(a_rows, scores_doc(0.0, 0.0)), b).scores["agent"]["mean/reward"]
    assert (entry.raw.paired.pairs, entry.raw.untrusted_pairs, entry.raw.change) == (6, 1, False)
    assert entry.raw.paired.delta == pytest.approx(1 / 6)
    assert (entry.clean.paired.pairs, entry.clean.paired.delta, entry.clean.untrusted_pairs, entry.clean.change) == (5, 0.0, 0, False)

    everywhere = [row(t, 0, reward=1.0) for t in range(6)]  # every rollout moved, one of them unhealthy in A
    a = scored(a_rows, scores_doc(0.0, 0.0), verdict_lines=verdicts_of(a_rows, unhealthy={(0, 0)}))
    entry = compare_runs(a, scored(everywhere, scores_doc(1.0, 1.0))).scores["agent"]["mean/reward"]
    assert (entry.raw.untrusted_pairs, entry.raw.change) == (1, False)
    assert (entry.clean.paired.pairs, entry.clean.change) == (5, True)


def test_the_score_mask_and_mask_sample_decide_which_pairs_count() -> None:
    a_rows = [row(t, 0, reward=0.0) for t in range(4)] + [row(9, 0, reward=0.0, mask_sample=True)]
    b_rows = [row(t, 0, reward=1.0) for t in range(4)] + [row(9, 0, reward=1.0)]
    manifest = finished_run(score_mask="unhealthy,unobserved")
    a = scored(a_rows, scores_doc(0.0, 0.0), verdict_lines=verdicts_of(a_rows, unobserved={(3, 0)}), manifest=manifest)
    entry = compare_runs(a, scored(b_rows, scores_doc(1.0, 1.0))).scores["agent"]["mean/reward"]
    assert entry.raw.paired.pairs == 4  # task 9 is masked by its own mask_sample in A: in no score
    assert (entry.raw.untrusted_pairs, entry.clean.paired.pairs) == (1, 3)  # A masks unobserved rollouts too


def test_scores_of_groups_either_run_has_and_runs_without_scores() -> None:
    rows = [row(0, 0, reward=1.0)]
    only_b = compare_runs(scored(rows, {"groups": {}}), scored(rows, scores_doc(1.0, None))).scores
    entry = only_b["agent"]["mean/reward"]
    assert (entry.raw.scores.a, entry.raw.scores.b, entry.clean.scores.b, entry.clean.scores.delta) == (None, 1.0, None, None)
    assert entry.raw.paired.delta == 0.0
    assert not entry.raw.change
    assert compare_runs(evidence(rows), evidence(rows)).scores == {}  # runs written before scores.json
