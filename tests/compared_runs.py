"""Three runs of one generated job for the comparison tests: a run, a rerun, and a run after
known changes to the job's inputs (as an evaluation rerun after an agent or model change).

The changes, applied in place to the job's files between the rerun and the third run:
- every ``simple_agent`` row's reward becomes 1.0;
- the rows of the first ``claude_code_agent`` task lose their ``tool_call`` observation records;
- the ``harness_agent`` captures answer from another model (``SWAPPED_MODEL``);
- one ``chat_agent`` row is removed (only in A).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from tests.flows.support import local_path, run_stage
from tests.jobgen import generate_job

POLICY_MODEL = "Qwen/Qwen3-235B-A22B-Thinking-2507"
SWAPPED_MODEL = "Qwen/Qwen3-30B-A3B-Instruct-2507"


@dataclass(frozen=True)
class ComparedRuns:
    """The run directories and what was changed between ``first`` and ``changed``."""

    first: Path
    rerun: Path
    changed: Path
    removed_row: str
    tools_removed: list[str]


def _rows(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _agent(row: dict[str, Any]) -> str:
    return row["agent_ref"]["name"]


def change_job(job: Path) -> tuple[str, list[str]]:
    """Apply the planted changes in place; return the removed row's label and the tool-less rows."""
    rows = sorted(_rows(job / "rollouts.jsonl"), key=lambda r: (r["_ng_task_index"], r["_ng_rollout_index"]))
    removed = next(r for r in rows if _agent(r) == "chat_agent")
    claude_task = min(r["_ng_task_index"] for r in rows if _agent(r) == "claude_code_agent")
    tools_removed = []
    kept = []
    for row in _rows(job / "rollouts.jsonl"):  # file order kept
        if (row["_ng_task_index"], row["_ng_rollout_index"]) == (removed["_ng_task_index"], removed["_ng_rollout_index"]):
            continue
        if _agent(row) == "simple_agent":
            row["reward"] = 1.0
        if _agent(row) == "claude_code_agent" and row["_ng_task_index"] == claude_task:
            records = row["ng_agent_observations"]["records"]
            row["ng_agent_observations"]["records"] = [r for r in records if r.get("kind") != "tool_call"]
            tools_removed.append(f"{row['_ng_task_index']}-{row['_ng_rollout_index']}")
        kept.append(row)
    (job / "rollouts.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in kept))
    harness_tasks = {r["_ng_task_index"] for r in rows if _agent(r) == "harness_agent"}
    for capture in (job / "model-calls").iterdir():
        if int(capture.name.split("-")[0]) in harness_tasks:
            capture.write_bytes(capture.read_bytes().replace(POLICY_MODEL.encode(), SWAPPED_MODEL.encode()))
    return f"{removed['_ng_task_index']}-{removed['_ng_rollout_index']}", sorted(tools_removed)


def make_compared_runs(root: Path) -> ComparedRuns:
    """Generate the job under ``root``, run it twice, change it, run it again (thread runner)."""
    job = root / "job"
    generate_job(job, rollouts=48, calls_per_rollout=3, history_bytes=200, seed=11, failures_fraction=0.05)

    def run() -> Path:
        result = run_stage(
            rollouts=str(job / "rollouts.jsonl"), capture_dir=str(job / "model-calls"), output=str(root / "out"), task_runner="thread"
        )
        return local_path(result["run_dir"])

    first, rerun = run(), run()
    removed, tools_removed = change_job(job)
    return ComparedRuns(first=first, rerun=rerun, changed=run(), removed_row=removed, tools_removed=tools_removed)
