"""The seven row shapes that once failed a whole run (issue 13), built from a real example row.

Each shape is a small change to a collected row of the bundled example job, so the rest of the
row is realistic. ``bad_job`` writes a job of good rows with every shape planted among them.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from tests.conftest import EXAMPLE_JOB

DEPTH = 500
U64_MAX = 2**64 - 1


def nested(depth: int, leaf: Any = 0) -> Any:
    """A list nested ``depth`` deep around ``leaf``."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def nested_object(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def _bare(row: dict[str, Any], task: int) -> dict[str, Any]:
    """A row without evidence (no capture id), so its own ng_perf is kept as given."""
    return {"_ng_task_index": task, "_ng_rollout_index": 0, "agent_ref": row.get("agent_ref"), "reward": 0.0}


@dataclass(frozen=True)
class Shape:
    """One bad shape: the rows it adds (and the capture lines it needs), and what the run must say."""

    name: str
    rows: Callable[[dict[str, Any]], list[dict[str, Any]]]
    capture: Callable[[list[bytes]], list[bytes]] | None = None
    status: str = "failed"
    reason: str = ""
    collected: bool = False


def _with_capture(rollout: str) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    def rows(row: dict[str, Any]) -> list[dict[str, Any]]:
        return [{**row, "_ng_task_index": 90, "_ng_rollout_index": 0, "_ng_rollout_id": rollout}]

    return rows


def _deep_response(lines: list[bytes]) -> list[bytes]:
    record = orjson.loads(lines[0])
    record["response"] = {**record["response"], "deep": nested(DEPTH)}
    return [_exact(record)]


def _wide_usage(lines: list[bytes]) -> list[bytes]:
    out = []
    for line in lines[:2]:
        record = orjson.loads(line)
        usage = record["response"].get("usage") or {}
        record["response"] = {**record["response"], "usage": {**usage, "output_tokens": U64_MAX}}
        out.append(orjson.dumps(record))
    return out


def _role_list(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The collected row again (its own capture file), with a conversation role that is a list."""
    row = copy.deepcopy(row)
    row.update({"_ng_task_index": 93, "_ng_rollout_id": row["ng_model_call_capture"]["rollout_id"]})
    for invocation in row["ng_trajectory"]["invocations"]:
        for item in invocation.get("conversation") or []:
            if isinstance(item, dict) and "role" in item:
                item["role"] = [item["role"]]
    return [row]


def _rejected_object_ref(row: dict[str, Any]) -> list[dict[str, Any]]:
    row = copy.deepcopy(row)
    row.update({"_ng_task_index": 94, "_ng_failure_class": []})
    row["ng_trajectory"]["turns"][0]["invocation_id"] = {"not": "an id"}
    return [row]


SHAPES = (
    Shape("deep_row", lambda row: [{**_bare(row, 91), "deep": nested(DEPTH)}], status="ok"),
    Shape("deep_capture_response", _with_capture("deep-capture"), _deep_response, status="ok"),
    Shape("wide_usage_sum", _with_capture("wide-usage"), _wide_usage, status="ok"),
    Shape("deep_latency", lambda row: [{**_bare(row, 92), "ng_perf": {"total_latency_ms": nested_object(252)}}], status="ok"),
    Shape("atif_role_list", _role_list, status="ok", collected=True),
    Shape(
        "rejected_object_ref",
        _rejected_object_ref,
        status="rejected",
        collected=True,
        reason="TypeError: unhashable type: 'list'; TypeError: unhashable type: 'dict' (in capability digest)",
    ),
    Shape(
        "perf_overflow",
        lambda row: [{**_bare(row, 95 + i), "ng_perf": {"num_turns": 1e308, "prompt_tokens": [U64_MAX, 1][i]}} for i in range(2)],
        status="ok",
    ),
)


def bad_job(root: Path, collected: dict[str, Any]) -> tuple[Path, dict[str, list[int]]]:
    """The example job with every shape's rows appended; returns the job and each shape's main lines.

    ``collected`` is the first example row as the stage enriched it (with ``ng_trajectory``):
    the ATIF and capability shapes damage an already collected row.
    """
    job = root / "bad_job"
    shutil.copytree(EXAMPLE_JOB, job)
    rows_path = job / "rollouts.jsonl"
    lines = [line for line in rows_path.read_bytes().splitlines() if line.strip()]
    template = orjson.loads(lines[0])
    template_capture = (job / "model-calls" / "0-0.capture.jsonl").read_bytes().splitlines()
    where: dict[str, list[int]] = {}
    for shape in SHAPES:
        for row in shape.rows(collected if shape.collected else template):
            lines.append(_exact(row))
            where.setdefault(shape.name, []).append(len(lines))
            rollout = row.get("_ng_rollout_id")
            if shape.capture is not None and rollout:
                (job / "model-calls" / f"{rollout}.capture.jsonl").write_bytes(b"\n".join(shape.capture(template_capture)) + b"\n")
    rows_path.write_bytes(b"\n".join(lines) + b"\n")
    return job, where


def _exact(value: Any) -> bytes:
    """JSON text orjson refuses to write (too deep): the stdlib writes it, recursion permitting."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
