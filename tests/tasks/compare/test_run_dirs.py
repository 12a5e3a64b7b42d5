"""Reading a run directory for a comparison: every line the stage writes is read."""

from __future__ import annotations

from pathlib import Path

from tasks.compare.run_dirs import read_run
from tasks.storage import Location
from tests.manifests import finished_run, manifest_bytes


def test_rows_orjson_refuses_are_read_as_the_stage_wrote_them(tmp_path: Path) -> None:
    """Issue 45: a rollouts.jsonl line nested past orjson's 1,024 levels (a capture's deep value
    inside the enriched row) made the comparison raise ``depth limit exceeded``."""
    deep = b"[" * 1100 + b"0" + b"]" * 1100
    (tmp_path / "manifest.json").write_bytes(manifest_bytes(finished_run()))
    rows = [
        b'{"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 1.0, "ng_model_call_capture": {"calls": [{"response": ' + deep + b"}]}}",
        b'{"_ng_task_index": 1, "_ng_rollout_index": 0, "reward": 0.5, "note": "\\ud800"}',  # a lone surrogate, escaped
        b'{"_ng_task_index": 2, "_ng_rollout_index": 0, "reward": 0.0}',
        b'{"_ng_task_index": NaN',  # no parser reads it: no row
    ]
    (tmp_path / "rollouts.jsonl").write_bytes(b"\n".join(rows) + b"\n")
    evidence = read_run(Location(str(tmp_path)))
    assert [(r.label, r.values["reward"]) for r in evidence.rollouts] == [("0-0", 1.0), ("1-0", 0.5), ("2-0", 0.0)]
