"""``evidence-stage report``'s rebuild of the histograms from a finished run's rows."""

from __future__ import annotations

from pathlib import Path

from tasks.publish.report import rebuild_histograms
from tasks.storage import Location


def test_the_histograms_are_rebuilt_from_every_row_the_stage_writes(tmp_path: Path) -> None:
    """Issue 45: a row orjson refuses (nested past 1,024 levels) or one whose identity is nested
    past the default recursion limit (the score digest's ``f"{task}:{rollout}"``) made ``report`` raise."""
    agent = b'"agent_ref": {"name": "agent"}, "ng_perf": {"total_latency_ms": 250.0}'
    rows = [
        b'{"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 1.0, '
        + agent
        + b', "response": {"output": '
        + b"[" * 1100
        + b"]" * 1100
        + b"}}",
        b'{"_ng_task_index": ' + b"[" * 1000 + b"]" * 1000 + b', "_ng_rollout_index": 0, "reward": 0.5, ' + agent + b"}",
        b'{"_ng_task_index": 2, "_ng_rollout_index": 0, "reward": 0.25, ' + agent + b"}",
    ]
    (tmp_path / "rollouts.jsonl").write_bytes(b"\n".join(rows) + b"\n")
    histograms = rebuild_histograms(Location(str(tmp_path)))
    assert histograms["reward"] == [1.0, 0.5, 0.25]
    assert histograms["latency_ms"] == [250.0, 250.0, 250.0]
