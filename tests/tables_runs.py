"""Stage runs for the analysis-table tests, and the check that a run's tables equal its sources.

``check_tables`` recomputes, from the run's JSONL outputs and manifest held in memory (the runs
are small), what every table must hold: the rollouts in manifest order with their identity,
status and bytes; as many turns, model calls, tool calls and gaps per attempt as the rows
list; the verdicts and findings of ``health/rollout_verdicts.jsonl``; the ATIF files and
refusals; and every key of a child table joining a rollout.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from evidence.tables import TABLES, schema_document
from tasks.tables.parquet import arrow_schema
from tests.conftest import EXAMPLE_JOB, SAMPLES
from tests.flows.support import local_path, run_stage
from tests.jobgen import generate_job, shard_job

KEYS = ("job_id", "run_id", "attempt_key")


def stage_run(output: Path, rollouts: str, capture_dir: Path, *, job_id: str, run_id: str = "r1", **fields: Any) -> Path:
    """One stage run in-process (thread runner); its run directory."""
    result = run_stage(
        rollouts=rollouts, capture_dir=str(capture_dir), output=str(output), job_id=job_id, run_id=run_id, task_runner="thread", **fields
    )
    return local_path(result["run_dir"])


def example_run(output: Path, **fields: Any) -> Path:
    return stage_run(output, str(EXAMPLE_JOB / "rollouts.jsonl"), EXAMPLE_JOB / "model-calls", job_id="example_job", **fields)


def sample_run(output: Path, name: str) -> Path:
    job = SAMPLES / name
    return stage_run(output, str(job / "rollouts.jsonl"), job / "model-calls", job_id=name)


def sharded_run(root: Path) -> Path:
    info = generate_job(root / "job", rollouts=48, calls_per_rollout=4, history_bytes=200, seed=3, failures_fraction=0.2)
    job = shard_job(info)
    return stage_run(root / "out", f"{job.root}/rollouts-*.jsonl", job.capture_dir, job_id="sharded")


def read_tables(run: Path) -> dict[str, pa.Table]:
    return {name: pq.read_table(run / "tables" / table.file) for name, table in TABLES.items()}


def _rows(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines() if path.exists() else []


def _trajectory_lists(row: dict[str, Any] | None) -> dict[str, int]:
    trajectory = (row or {}).get("ng_trajectory")
    if not isinstance(trajectory, dict):
        return {"turns": 0, "model_calls": 0, "tool_calls": 0}
    return {name: len(trajectory.get(name) or []) for name in ("turns", "model_calls", "tool_calls")}


def _gap_count(row: dict[str, Any] | None) -> int:
    return sum(
        len((row or {}).get(origin, {}).get("gaps") or []) for origin in ("ng_model_call_capture", "ng_agent_observations", "ng_trajectory")
    )


def check_tables(run: Path) -> dict[str, pa.Table]:
    """Assert that ``run``'s tables hold exactly what its outputs say; the tables."""
    manifest = json.loads((run / "manifest.json").read_text())
    job_id, run_id = manifest["run"]["job_id"], manifest["run"]["run_id"]
    tables = read_tables(run)
    assert json.loads((run / "tables" / "_schema.json").read_text()) == schema_document()
    for name, table in tables.items():
        assert table.schema.remove_metadata() == arrow_schema(TABLES[name]).remove_metadata(), name
        assert set(table.column("job_id").to_pylist()) <= {job_id}, name
        assert set(table.column("run_id").to_pylist()) <= {run_id}, name

    rollouts = tables["rollouts"].to_pylist()
    attempts = manifest["attempts"]
    assert [(r["attempt_key"], r["source"], r["line"], r["status"], r["reason"], r["rollout_id"]) for r in rollouts] == [
        (a["key"], a["source"], a["line"], a["status"], a.get("reason"), a["rollout_id"]) for a in attempts
    ]
    lines = {"main": _rows(run / "rollouts.jsonl"), "failures": _rows(run / "rollouts_failures.jsonl")}
    assert Counter(r["source"] for r in rollouts) == Counter({k: len(v) for k, v in lines.items() if v})
    expected = Counter()
    for r in rollouts:
        line = lines[r["source"]][r["output_line"] - 1]
        assert r["bytes"] == len(line)
        row = orjson.loads(line)
        assert (r["agent"], r["reward"], r["task_index"], r["rollout_index"]) == (
            row.get("agent_ref", {}).get("name"),
            row.get("reward"),
            row.get("_ng_task_index"),
            row.get("_ng_rollout_index"),
        )
        counts = _trajectory_lists(row)
        assert r["has_trajectory"] == isinstance(row.get("ng_trajectory"), dict)
        if r["has_trajectory"]:
            assert (r["turn_count"], r["model_call_count"], r["tool_call_count"]) == (
                counts["turns"],
                counts["model_calls"],
                counts["tool_calls"],
            )
        assert r["gap_count"] == _gap_count(row)
        expected.update(counts | {"gaps": _gap_count(row)})
        if r["shard"]:
            assert r["attempt_key"].startswith(f"{r['shard']}:")
    for name in ("turns", "model_calls", "tool_calls", "gaps"):
        assert tables[name].num_rows == expected[name], name
        per_attempt = Counter(tables[name].column("attempt_key").to_pylist())
        column = {"turns": "turn_count", "model_calls": "model_call_count", "tool_calls": "tool_call_count", "gaps": "gap_count"}[name]
        assert per_attempt == Counter({r["attempt_key"]: r[column] for r in rollouts if r[column]}), name

    verdicts = [orjson.loads(line) for line in _rows(run / "health" / "rollout_verdicts.jsonl")]
    judged = [r for r in rollouts if r["verdict"] is not None]
    assert all(r["source"] == "main" for r in judged)
    assert len(judged) == len(verdicts)
    assert Counter(
        (v["_ng_task_index"], v["_ng_rollout_index"], v["verdict"], len(v["findings"]), tuple(v["unobserved"])) for v in verdicts
    ) == Counter((r["task_index"], r["rollout_index"], r["verdict"], r["finding_count"], tuple(r["unobserved"])) for r in judged)
    assert tables["findings"].num_rows == sum(len(v["findings"]) for v in verdicts)
    assert Counter(f["check"] for f in tables["findings"].to_pylist()) == Counter(f["check"] for v in verdicts for f in v["findings"])
    assert Counter(tables["findings"].column("attempt_key").to_pylist()) == Counter(
        {r["attempt_key"]: r["finding_count"] for r in judged if r["finding_count"]}
    )

    main = [r for r in rollouts if r["source"] == "main"]
    rejections = [orjson.loads(line) for line in _rows(run / "atif" / "rejections.jsonl")]
    assert [(r["output_line"], r["atif_refusal"]) for r in main if r["atif_status"] == "refused"] == [
        (x["line"], x["error"]) for x in rejections
    ]
    exported = [orjson.loads(line)["trajectory_path"] for line in _rows(run / "atif" / "manifest.jsonl")]
    assert [r["atif_file"] for r in main if r["atif_status"] == "exported"] == exported
    assert all(r["atif_status"] is None for r in rollouts if r["source"] == "failures")
    if not (run / "atif" / "manifest.jsonl").exists():
        assert {r["atif_status"] for r in main} <= {"refused", "withheld"}

    keys = {tuple(r[k] for k in KEYS): r["source"] for r in rollouts}
    for name, table in tables.items():
        for child in table.select([*KEYS, "source"]).to_pylist():
            assert keys.get(tuple(child[k] for k in KEYS)) == child["source"], name
    turn_keys = {(t["attempt_key"], t["turn_index"]) for t in tables["turns"].to_pylist()}
    for call in tables["model_calls"].to_pylist():
        assert call["turn_index"] is None or (call["attempt_key"], call["turn_index"]) in turn_keys
    return tables
