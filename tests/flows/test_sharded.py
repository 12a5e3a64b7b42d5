"""A sharded job (three chunked `gym eval run` shards with sidecars, some rollouts lost) end to end."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from flows.batch import batch_flow
from flows.cli.main import main
from flows.params.batch import BatchParams
from flows.params.stage import StageParams
from flows.stage import stage_flow
from tasks.inputs.naming import canonical_url, job_id_for
from tasks.publish.links import job_artifact_key
from tests.conftest import REPO
from tests.flows.support import local_path, run_outputs, run_stage
from tests.flows.test_artifacts import artifacts_of
from tests.jobgen import ShardedJob, generate_job, shard_job

pytestmark = pytest.mark.usefixtures("prefect_server")

GOLDEN = REPO / "tests" / "data" / "sharded_job"


@dataclass(frozen=True)
class ShardedRun:
    job: ShardedJob
    result: dict[str, Any]
    flow_run_id: UUID

    @property
    def run(self) -> Path:
        return local_path(self.result["run_dir"])

    def manifest(self) -> dict[str, Any]:
        return json.loads((self.run / "manifest.json").read_text())


def make_sharded_job(root: Path) -> ShardedJob:
    info = generate_job(root, rollouts=48, calls_per_rollout=4, history_bytes=200, seed=3, failures_fraction=0.2)
    return shard_job(info)


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory, prefect_server: str) -> ShardedRun:
    job = make_sharded_job(tmp_path_factory.mktemp("sharded") / "job")
    params = StageParams(
        rollouts=f"{job.root}/rollouts-*.jsonl",
        capture_dir=str(job.capture_dir),
        output=str(job.root.parent / "out"),
        task_runner="thread",
        keep_parts=True,
    )
    state = stage_flow(params, return_state=True)
    return ShardedRun(job, state.result(), state.state_details.flow_run_id)


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _key(row: dict[str, Any]) -> tuple[Any, Any]:
    return row["_ng_task_index"], row["_ng_rollout_index"]


def test_health_is_0_7_0_over_the_shard_sequence(sharded: ShardedRun) -> None:
    for name in ("quality_summary.json", "rollout_verdicts.jsonl"):
        assert (sharded.run / "health" / name).read_bytes() == (GOLDEN / name).read_bytes(), name


def test_enriched_outputs_keep_shard_order_and_the_manifest_describes_each_shard(sharded: ShardedRun) -> None:
    shards = sharded.job.shards
    assert [_key(r) for r in _rows(sharded.run / "rollouts.jsonl")] == [_key(r) for s in shards for r in _rows(s)]
    failures = [_key(r) for s in shards for r in _rows(s.with_name(s.stem + "_failures.jsonl"))]
    assert [_key(r) for r in _rows(sharded.run / "rollouts_failures.jsonl")] == failures
    manifest = sharded.manifest()
    assert json.loads((sharded.run / "params.json").read_text())["rollouts"] == [canonical_url(str(s)) for s in shards]
    assert manifest["run"]["job_id"] == job_id_for([str(s) for s in shards])
    described = [(s["file"], s["rows"]) for s in manifest["shards"]]
    assert described == [(s.name, {"main": len(_rows(s)), "failures": len(_rows(s.with_name(s.stem + "_failures.jsonl")))}) for s in shards]
    assert len({s["fingerprint"] for s in manifest["shards"]}) == 3
    keys = [a["key"] for a in manifest["attempts"]]
    assert keys[0] == "0:main:1"
    assert keys[-1].startswith("2:failures:")
    assert sorted(p.relative_to(sharded.run / "attempts").parts[0] for p in (sharded.run / "attempts").glob("*/*")) == [
        "shard-0000",
        "shard-0000",
        "shard-0001",
        "shard-0001",
        "shard-0002",
        "shard-0002",
    ]


def test_repeated_rollouts_options_are_the_same_job_as_the_glob(sharded: ShardedRun, tmp_path: Path) -> None:
    args = [arg for shard in sharded.job.shards for arg in ("--rollouts", str(shard))]
    out = tmp_path / "out"
    assert (
        main(
            ["run", *args, "--capture-dir", str(sharded.job.capture_dir), "--output", str(out), "--run-id", "r1", "--task-runner", "thread"]
        )
        == 0
    )
    again = out / sharded.manifest()["run"]["job_id"] / "runs" / "r1"
    assert run_outputs(str(again)) == run_outputs(sharded.result["run_dir"])


def test_batch_processes_a_folder_of_shards_as_one_job(tmp_path: Path) -> None:
    job = make_sharded_job(tmp_path / "jobs" / "sharded")
    params = BatchParams(prefix=str(tmp_path / "jobs"), output=str(tmp_path / "out"), task_runner="thread")
    first = batch_flow(params)
    assert (first["counts"]["processed"], first["counts"]["skipped_folders"]) == (1, 0)
    (entry,) = first["jobs"]
    assert entry["rollouts"] == [canonical_url(str(s)) for s in job.shards]
    assert entry["job_id"] == job_id_for([str(s) for s in job.shards])
    assert [e["status"] for e in batch_flow(params)["jobs"]] == ["skipped"]


def test_accounting_counts_every_shards_debt_exactly(sharded: ShardedRun) -> None:
    job = sharded.job
    accounting = json.loads((sharded.run / "accounting.json").read_text())
    for shard in job.shards:
        owed = _rows(shard.with_name(shard.stem + "_materialized_inputs.jsonl"))
        side = {_key(r): r["_ng_failure_class"] for r in _rows(shard.with_name(shard.stem + "_failures.jsonl"))}
        failed_classes: dict[str, int] = {}
        for key in job.failed[shard.name]:
            failed_classes[side[key]] = failed_classes.get(side[key], 0) + 1
        assert accounting["shards"][shard.name] == {
            "expected": len(owed),
            "landed": len(_rows(shard)),
            "failed": len(job.failed[shard.name]),
            "failed_by_class": dict(sorted(failed_classes.items())),
            "lost": len(job.lost[shard.name]),
            "duplicates": 1 if shard == job.shards[1] else 0,
            "unexpected": 0,
            "unreadable_inputs": 0,
        }
    lost = sorted((k["shard"], k["_ng_task_index"], k["_ng_rollout_index"]) for k in accounting["lost_keys"])
    assert lost == sorted((name, t, r) for name, keys in job.lost.items() for t, r in keys)
    totals = {k: accounting[k] for k in ("expected", "landed", "failed", "lost", "duplicates", "unexpected")}
    assert totals == {"expected": 48, "landed": 40, "failed": 3, "lost": 6, "duplicates": 1, "unexpected": 0}
    assert sharded.manifest()["accounting"]["lost"] == 6
    assert [s["accounting"] for s in sharded.manifest()["shards"]] == list(accounting["shards"].values())
    page = (sharded.run / "report.html").read_text()
    assert '<table id="accounting">' in page
    assert '<table id="lost-rollouts">' in page
    artifact = artifacts_of(sharded.flow_run_id)[job_artifact_key("evidence-stage-accounting", sharded.run.parent.parent.name)]
    assert artifact.type == "markdown"
    assert "| total | 48 | 40 | 3 | 6 | 1 | 0 |" in artifact.data


def test_a_shard_without_materialized_inputs_is_expected_unknown(tmp_path: Path) -> None:
    job = make_sharded_job(tmp_path / "job")
    missing = job.shards[2]
    missing.with_name(missing.stem + "_materialized_inputs.jsonl").unlink()
    result = run_stage(
        rollouts=",".join(str(s) for s in job.shards), capture_dir=str(job.capture_dir), output=str(tmp_path / "out"), task_runner="thread"
    )
    accounting = json.loads((local_path(result["run_dir"]) / "accounting.json").read_text())
    assert (accounting["expected"], accounting["expected_unknown"]) == (None, [missing.name])
    assert (accounting["shards"][missing.name]["expected"], accounting["shards"][missing.name]["lost"]) == (None, None)
    assert [accounting["shards"][s.name]["lost"] for s in job.shards[:2]] == [2, 2]  # the two shards whose debt is known
    assert (accounting["lost"], accounting["unexpected"]) == (None, None)  # a total over an unknown debt is unknown (issue 35)
