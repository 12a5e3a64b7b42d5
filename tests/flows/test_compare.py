"""``evidence-stage compare`` and the compare flow on real stage runs of one generated job.

``compared_runs`` (tests/compared_runs.py) holds a run, a rerun of the same inputs, and a run
after known changes. The figures of ``compare.json`` are checked against an independent
reading of the two run directories (the bootstrap intervals by ``tests/bootstrap_reference.py``,
never by the code under test), and the planted changes against their known values.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from evidence.capabilities import DIMENSIONS
from flows.cli.main import main
from flows.compare import compare_flow
from flows.params.compare import CompareParams
from tests.bootstrap_reference import reference_interval
from tests.compared_runs import POLICY_MODEL, SWAPPED_MODEL, ComparedRuns

pytestmark = pytest.mark.usefixtures("prefect_server")

VERDICTS = ("healthy", "unhealthy", "unobserved")
METRICS = ("reward", "prompt_tokens", "completion_tokens", "total_latency_ms")


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()] if path.exists() else []


def read(run: Path) -> dict[str, Any]:
    return {
        "rows": jsonl(run / "rollouts.jsonl"),
        "verdicts": jsonl(run / "health" / "rollout_verdicts.jsonl"),
        "summary": json.loads((run / "health" / "quality_summary.json").read_text()),
        "perf": json.loads((run / "perf_summary.json").read_text()),
        "capabilities": json.loads((run / "capabilities.json").read_text()),
        "manifest": json.loads((run / "manifest.json").read_text()),
        "accepted": [f"{m['_ng_task_index']}-{m['_ng_rollout_index']}" for m in jsonl(run / "atif" / "manifest.jsonl")],
        "rejections": jsonl(run / "atif" / "rejections.jsonl"),
        "scores": json.loads((run / "scores.json").read_text()),
    }


def label(record: dict[str, Any]) -> str:
    return f"{record['_ng_task_index']}-{record['_ng_rollout_index']}"


def group_of(row: dict[str, Any]) -> str:
    return row.get("_ng_environment_server") or row["agent_ref"]["name"]


def number(row: dict[str, Any], metric: str) -> float | None:
    value = row.get("reward") if metric == "reward" else row.get("ng_perf", {}).get(metric)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def change(a: Any, b: Any) -> dict[str, Any]:
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
    return {"a": a, "b": b, "delta": b - a if numeric else None}


def models(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(
        {c["model"] for r in rows for c in r.get("ng_model_call_capture", {}).get("calls", []) if isinstance(c.get("model"), str)}
    )


def expected_group(
    rows_a: list[dict], rows_b: list[dict], pairs: list[tuple[dict, dict]], regrouped: int, perf_a: dict, perf_b: dict
) -> dict:
    def mean_reward(rows: list[dict]) -> float | None:
        values = [number(r, "reward") for r in rows if number(r, "reward") is not None]
        return statistics.fmean(values) if values else None

    intervals = {}
    for metric in METRICS:
        by_task: dict[str, list[float]] = {}
        for x, y in pairs:
            if number(x, metric) is not None and number(y, metric) is not None:
                by_task.setdefault(json.dumps(x["_ng_task_index"]), []).append(number(y, metric) - number(x, metric))
        intervals[metric] = reference_interval(by_task, seed=0)
    return {
        "rollouts": change(len(rows_a), len(rows_b)),
        "paired": len(pairs),
        "regrouped": regrouped,
        "rewards_changed": sum(1 for x, y in pairs if number(x, "reward") != number(y, "reward")),
        "mean_reward": change(mean_reward(rows_a), mean_reward(rows_b)),
        "models": {"a": models(rows_a), "b": models(rows_b)},
        "perf": {k: change(perf_a.get(k), perf_b.get(k)) for k in dict.fromkeys([*perf_a, *perf_b])},
        "intervals": intervals,
    }


def score_group(row: dict[str, Any]) -> str:
    server = row.get("_ng_environment_server")
    return server if isinstance(server, str) else row["agent_ref"]["name"]


def field_value(row: dict[str, Any], field: str) -> float | None:
    """A row's number as 0.7.0's aggregate metrics read it: ``response.usage`` first, then the row, bools as 0/1."""
    usage = (row.get("response") or {}).get("usage") or {}
    value = usage.get(field, row.get(field))
    return float(value) if isinstance(value, (int, float)) else None


def expected_scores(a: dict, b: dict) -> dict:
    """Per group and key metric, raw and clean: both runs' scores.json figures and the paired interval (default score mask)."""
    rows_b = {label(r): r for r in b["rows"]}
    pairs = [(r, rows_b[label(r)]) for r in a["rows"] if label(r) in rows_b]
    bad_a, bad_b = ({label(v) for v in run["verdicts"] if v["verdict"] == "unhealthy"} for run in (a, b))
    groups_a, groups_b = a["scores"]["groups"], b["scores"]["groups"]
    expected: dict[str, Any] = {}
    for group in dict.fromkeys([*groups_a, *groups_b]):
        inside = [
            (x, y) for x, y in pairs if score_group(x) == score_group(y) == group and not x.get("mask_sample") and not y.get("mask_sample")
        ]
        trusted = [(x, y) for x, y in inside if label(x) not in bad_a and label(y) not in bad_b]
        metrics_a, metrics_b = groups_a.get(group, {}).get("metrics", {}), groups_b.get(group, {}).get("metrics", {})
        expected[group] = {}
        for metric in dict.fromkeys([*metrics_a, *metrics_b]):
            entry = {}
            for side, chosen in (("raw", inside), ("clean", trusted)):
                by_task: dict[str, list[float]] = {}
                for x, y in chosen:
                    before, after = field_value(x, metric[len("mean/") :]), field_value(y, metric[len("mean/") :])
                    if before is not None and after is not None:
                        by_task.setdefault(json.dumps(x["_ng_task_index"]), []).append(after - before)
                interval = reference_interval(by_task, seed=0)
                untrusted = len(inside) - len(trusted) if side == "raw" else 0
                low, high = interval["low"], interval["high"]
                excludes_zero = low is not None and high is not None and (low > 0 or high < 0)
                entry[side] = {
                    "scores": change(metrics_a.get(metric, {}).get(side), metrics_b.get(metric, {}).get(side)),
                    "paired": interval,
                    "untrusted_pairs": untrusted,
                    "change": untrusted == 0 and excludes_zero,
                }
            expected[group][metric] = entry
    return expected


def expected_health(a: dict, b: dict) -> dict:
    verdicts_b = {label(v): v for v in b["verdicts"]}
    pairs = [(v, verdicts_b[label(v)]) for v in a["verdicts"] if label(v) in verdicts_b]
    checks_of = lambda v: {f["check"] for f in v["findings"]}  # noqa: E731
    run_a, run_b = a["summary"]["run"], b["summary"]["run"]
    checks = {}
    for check in dict.fromkeys([*run_a["issues"], *run_b["issues"]]):
        flagged = [label(y) for x, y in pairs if check in checks_of(y) - checks_of(x)]
        cleared = [label(y) for x, y in pairs if check in checks_of(x) - checks_of(y)]
        tasks = [t for t in a["summary"]["tasks"] if t in b["summary"]["tasks"]]
        flags = lambda s, t: set(s["summary"]["tasks"][t]["flags"])  # noqa: E731
        flagged += [f"task {t}" for t in tasks if check in flags(b, t) - flags(a, t)]
        cleared += [f"task {t}" for t in tasks if check in flags(a, t) - flags(b, t)]
        counts = change(run_a["issues"][check], run_b["issues"][check])
        checks[check] = {
            **counts,
            "flagged": len(flagged),
            "cleared": len(cleared),
            "flagged_rollouts": flagged[:20],
            "cleared_rollouts": cleared[:20],
        }
    return {
        "verdicts": {v: change(run_a["verdicts"][v], run_b["verdicts"][v]) for v in VERDICTS},
        "transitions": {v: {w: sum(1 for x, y in pairs if (x["verdict"], y["verdict"]) == (v, w)) for w in VERDICTS} for v in VERDICTS},
        "paired_verdicts": len(pairs),
        "checks": checks,
        "ignored_checks": {"a": run_a["ignored_checks"], "b": run_b["ignored_checks"]},
        "coverage": {
            c: {"a": run_a["artifacts"]["coverage"][c], "b": run_b["artifacts"]["coverage"][c]} for c in run_a["artifacts"]["coverage"]
        },
    }


def expected_comparison(first: Path, changed: Path) -> dict[str, Any]:
    """compare.json for two stage runs with no repeated keys, computed from their files alone."""
    a, b = read(first), read(changed)
    rows_b = {label(r): r for r in b["rows"]}
    pairs = [(r, rows_b[label(r)]) for r in a["rows"] if label(r) in rows_b]
    only_a = [label(r) for r in a["rows"] if label(r) not in rows_b]
    only_b = [label(r) for r in b["rows"] if label(r) not in {label(x) for x in a["rows"]}]
    names = sorted({*a["perf"]["groups"], *b["perf"]["groups"]})
    groups = {
        name: expected_group(
            [r for r in a["rows"] if group_of(r) == name],
            [r for r in b["rows"] if group_of(r) == name],
            [(x, y) for x, y in pairs if group_of(x) == group_of(y) == name],
            sum(1 for x, y in pairs if (group_of(x) == name) != (group_of(y) == name)),
            a["perf"]["groups"].get(name, {}),
            b["perf"]["groups"].get(name, {}),
        )
        for name in names
    }
    capabilities = []
    for agent in sorted({*a["capabilities"]["agents"], *b["capabilities"]["agents"]}):
        for dimension in DIMENSIONS:
            x = a["capabilities"]["agents"].get(agent, {}).get("dimensions", {}).get(dimension, {})
            y = b["capabilities"]["agents"].get(agent, {}).get("dimensions", {}).get(dimension, {})
            if x.get("status") != y.get("status"):
                capabilities.append(
                    {
                        "agent": agent,
                        "dimension": dimension,
                        "a": x.get("status"),
                        "b": y.get("status"),
                        "a_complete": x.get("complete"),
                        "b_complete": y.get("complete"),
                    }
                )
    reasons_a, reasons_b = Counter(r["error"] for r in a["rejections"]), Counter(r["error"] for r in b["rejections"])
    refused_a, refused_b = {r["rollout_id"] for r in a["rejections"]}, {r["rollout_id"] for r in b["rejections"]}
    newly_rejected, newly_accepted = sorted(refused_b & set(a["accepted"])), sorted(refused_a & set(b["accepted"]))

    def side(run: Path, data: dict) -> dict:
        manifest = data["manifest"]
        return {
            "run_dir": str(run),
            "job_id": manifest["run"]["job_id"],
            "run_id": manifest["run"]["run_id"],
            "config_fingerprint": manifest["config_fingerprint"],
            "gate": "unknown",
            "landed_share": None,
        }

    return {
        "a": side(first, a),
        "b": side(changed, b),
        "pairing": {
            "paired": len(pairs),
            "only_in_a": len(only_a),
            "only_in_b": len(only_b),
            "repeated_keys_a": 0,
            "repeated_keys_b": 0,
            "only_in_a_rollouts": only_a,
            "only_in_b_rollouts": only_b,
        },
        "scores": expected_scores(a, b),
        "health": expected_health(a, b),
        "run": expected_group(
            a["rows"], b["rows"], pairs, sum(1 for x, y in pairs if group_of(x) != group_of(y)), a["perf"]["run"], b["perf"]["run"]
        ),
        "groups": groups,
        "capabilities": capabilities,
        "atif": {
            "accepted": change(len(a["accepted"]), len(b["accepted"])),
            "rejected": change(len(a["rejections"]), len(b["rejections"])),
            "reasons": [
                {"reason": r, "a": reasons_a[r], "b": reasons_b[r]}
                for r in sorted({*reasons_a, *reasons_b})
                if reasons_a[r] != reasons_b[r]
            ],
            "newly_rejected": len(newly_rejected),
            "newly_accepted": len(newly_accepted),
            "newly_rejected_rollouts": newly_rejected[:20],
            "newly_accepted_rollouts": newly_accepted[:20],
        },
        "bootstrap": {"seed": 0, "resamples": 1000, "confidence": 0.95, "unit": "task"},
    }


def compare_cli(run_a: Path, run_b: Path, output: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    assert main(["compare", str(run_a), str(run_b), "--output", str(output)]) == 0
    return json.loads((output / "compare.json").read_text(encoding="utf-8")), capsys.readouterr().out


def test_a_rerun_of_the_same_inputs_compares_as_no_change(
    compared_runs: ComparedRuns, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document, out = compare_cli(compared_runs.first, compared_runs.rerun, tmp_path, capsys)

    assert (document["status"], document["changed"], document["trust"]) == ("no change", [], {"trusted": True, "issues": []})
    assert out.splitlines()[0] == "no change; trusted"
    expected = expected_comparison(compared_runs.first, compared_runs.rerun)
    assert {k: document[k] for k in expected} == expected
    for group in [document["run"], *document["groups"].values()]:
        assert group["rewards_changed"] == group["regrouped"] == 0
        assert all(c["delta"] in (0, None) for c in [group["rollouts"], group["mean_reward"], *group["perf"].values()])
        assert all(i["pairs"] == 0 or i["delta"] == i["low"] == i["high"] == 0.0 for i in group["intervals"].values())
    sides = [side for metrics in document["scores"].values() for entry in metrics.values() for side in (entry["raw"], entry["clean"])]
    assert sides
    assert not any(side["change"] for side in sides)
    assert all(side["paired"]["pairs"] == 0 or side["paired"]["delta"] == 0.0 for side in sides)


def test_every_figure_of_a_known_change(compared_runs: ComparedRuns, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document, out = compare_cli(compared_runs.first, compared_runs.changed, tmp_path, capsys)

    expected = expected_comparison(compared_runs.first, compared_runs.changed)
    assert {k: document[k] for k in expected} == expected
    # The planted changes, as known numbers.
    assert document["status"] == "changed"
    assert document["changed"] == ["pairing", "scores", "health", "rewards", "perf", "models", "capabilities", "atif"]
    reward = document["scores"]["simple_agent"]["mean/reward"]["clean"]
    assert reward["change"] is True
    assert reward["paired"]["low"] > 0
    called = {(g, m) for g, metrics in document["scores"].items() for m, e in metrics.items() if e["clean"]["change"] or e["raw"]["change"]}
    assert {g for g, _ in called} == {"simple_agent"}
    assert document["pairing"]["only_in_a_rollouts"] == [compared_runs.removed_row]
    # Six of the 47 pairs' rewards rose by 1 (simple_agent's, the rest unchanged); the interval
    # recorded by hand (tests/bootstrap_reference.py over the two runs' rows, seed 0).
    assert document["run"]["intervals"]["reward"] == {"pairs": 47, "tasks": 12, "delta": 6 / 47, "low": 0.0, "high": 0.3333333333333333}
    assert document["pairing"]["only_in_b"] == 0
    simple = document["groups"]["simple_agent"]
    assert simple["mean_reward"]["b"] == 1.0
    assert simple["rewards_changed"] == sum(
        1 for r in read(compared_runs.first)["rows"] if r["agent_ref"]["name"] == "simple_agent" and r["reward"] != 1.0
    )
    assert (
        simple["intervals"]["reward"]["low"]
        <= simple["intervals"]["reward"]["delta"]
        == simple["mean_reward"]["delta"]
        <= simple["intervals"]["reward"]["high"]
    )
    assert [g for g, v in document["groups"].items() if v["rewards_changed"]] == ["simple_agent"]
    assert document["groups"]["harness_agent"]["models"] == {"a": [POLICY_MODEL], "b": [SWAPPED_MODEL]}
    assert [g for g, v in document["groups"].items() if v["models"]["a"] != v["models"]["b"]] == ["harness_agent"]
    assert {(c["agent"], c["dimension"], c["a"], c["b"]) for c in document["capabilities"]} == {
        ("claude_code_agent", "tool_execution", "full", "partial"),
        ("claude_code_agent", "parallel_timing", "full", "partial"),
    }
    assert document["trust"]["trusted"] is False
    assert [i["code"] for i in document["trust"]["issues"]] == ["capability_changed", "capability_changed"]
    assert "Tool execution went full \u2192 partial" in document["trust"]["issues"][0]["detail"]
    assert document["groups"]["chat_agent"]["rollouts"] == {"a": 8, "b": 7, "delta": -1}
    assert out.startswith("changed (pairing, scores, health, rewards, perf, models, capabilities, atif); not to be trusted as is")
    # Reproducible: the same runs and seed give the same bytes.
    again = tmp_path / "again"
    assert main(["compare", str(compared_runs.first), str(compared_runs.changed), "--output", str(again)]) == 0
    for name in ("compare.json", "compare.md", "compare.html"):
        assert (again / name).read_bytes() == (tmp_path / name).read_bytes()


def test_compare_refuses_a_folder_that_is_not_a_finished_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(tmp_path / "nope"), str(tmp_path / "nope"), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evidence-stage: error: ")
    assert "no manifest.json" in err
    assert len(err.splitlines()) == 1


def test_the_compare_flow_writes_the_default_folder_and_attaches_the_comparison(compared_runs: ComparedRuns) -> None:
    from tests.flows.test_artifacts import artifacts_of

    state = compare_flow(CompareParams(run_a=str(compared_runs.first), run_b=str(compared_runs.changed)), return_state=True)
    result = state.result()
    folder = compared_runs.changed.parent.parent / "compare" / f"{compared_runs.first.name}--{compared_runs.changed.name}"
    assert result == {
        "status": "changed",
        "trusted": False,
        "changed": json.loads((folder / "compare.json").read_text())["changed"],
        "output": f"file://{folder}",
    }  # run directories are file:// URLs
    assert sorted(p.name for p in folder.iterdir()) == ["compare.html", "compare.json", "compare.md"]
    artifacts = artifacts_of(state.state_details.flow_run_id)
    assert artifacts["evidence-stage-compare"].data == (folder / "compare.md").read_text(encoding="utf-8")
    assert str(folder / "compare.html") in artifacts["evidence-stage-compare-page"].data
    for key in ("evidence-stage-compare", "evidence-stage-compare-page"):  # described, as every run artifact is (issue 35)
        assert (artifacts[key].description or "").startswith(("Comparison of two runs (compare.md): ", "The comparison's page: ")), key


def test_the_sweep_compares_a_reprocessed_job_with_its_previous_complete_run(tmp_path: Path) -> None:
    import shutil

    from flows.batch import batch_flow
    from flows.params.batch import BatchParams
    from tests.conftest import EXAMPLE_JOB
    from tests.flows.test_artifacts import artifacts_of

    job = tmp_path / "jobs" / "job1"
    shutil.copytree(EXAMPLE_JOB, job)
    params = {"prefix": str(tmp_path / "jobs"), "output": str(tmp_path / "out"), "task_runner": "thread"}
    first = batch_flow(BatchParams(**params))
    assert "compare" not in first["jobs"][0]

    rows = jsonl(job / "rollouts.jsonl")
    rows[0]["reward"] = 1.0 - rows[0]["reward"]
    (job / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    state = batch_flow(BatchParams(**params, compare_previous=True), return_state=True)
    entry = state.result()["jobs"][0]

    assert entry["status"] == "processed"
    folder = tmp_path / "out" / entry["job_id"] / "compare" / f"{first['jobs'][0]['run_id']}--{entry['run_id']}"
    assert entry["compare"] == {"status": "changed", "trusted": True, "changed": ["rewards"], "output": f"file://{folder}"}
    document = json.loads((folder / "compare.json").read_text(encoding="utf-8"))
    assert document["run"]["rewards_changed"] == 1
    artifacts = artifacts_of(state.state_details.flow_run_id)
    assert artifacts[f"evidence-stage-compare-{entry['job_id'].lower().replace('_', '-')}"].data == (folder / "compare.md").read_text(
        encoding="utf-8"
    )
