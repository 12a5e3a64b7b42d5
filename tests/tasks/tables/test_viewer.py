"""The rollout viewer rebuilt from a run's outputs: which verdict, ATIF outcome and row each rollout gets, on any store."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import fsspec
import orjson
import pytest

from tasks.rundir import VIEWER_PAGE
from tasks.storage import Location
from tasks.tables.build import build_from_outputs
from tests.viewer_runs import BREAKOUT, IMAGE, LINK, SCRIPT, hostile_run


def write_viewer(run: Location) -> None:
    head = orjson.loads(run.child("manifest.json").read_bytes())["run"]
    build_from_outputs(run, head["job_id"], head["run_id"])


def page_index(run_dir: Path) -> dict[str, Any]:
    page = (run_dir / VIEWER_PAGE).read_text(encoding="utf-8")
    index: dict[str, Any] = json.loads(page.split('id="viewer-index">', 1)[1].split("</script>", 1)[0])
    return index


def details(run_dir: Path) -> list[dict[str, Any]]:
    found = []
    for name in page_index(run_dir)["chunk_files"]:
        data = (run_dir / "viewer" / name).read_bytes()
        found += orjson.loads(re.fullmatch(rb"evidenceViewer\.chunk\(\d+,(\[.*\])\);\n", data, re.DOTALL).group(1))  # type: ignore[union-attr]
    return found


def test_each_main_row_gets_its_verdict_atif_outcome_and_attempt(tmp_path: Path) -> None:
    run = hostile_run(tmp_path / "run")
    write_viewer(Location(str(run)))
    assert sorted(p.name for p in (run / "viewer").iterdir()) == ["index.html", "rollouts-00000.js"]
    index = page_index(run)
    fields = index["fields"]
    rows = [dict(zip(fields, row, strict=False)) for row in index["rows"]]
    assert [row["line"] for row in rows] == [1, 2, 3]  # the sidecar attempt is not a main row
    assert [index["codes"]["verdict"][row["verdict"]] for row in rows] == ["unhealthy", "healthy", "unhealthy"]
    assert [index["codes"]["atif"][row["atif"]] for row in rows] == ["exported", "refused", "refused"]
    assert [index["codes"]["status"][row["status"]] for row in rows] == ["ok", "rejected", "ok"]
    first, second, third = details(run)
    assert first["atif"]["file"] == LINK + ".json"
    assert first["notes"] == [SCRIPT]
    assert [f["targets"] for f in first["findings"]] == [[["turn", 1]], [["model_call", 1]], [], None]
    assert second["atif"]["refusal"].startswith(IMAGE)
    assert second["reason"] == BREAKOUT
    assert second["findings"] == []
    assert third["findings"][0]["check"] == "record_unreadable"  # health could not read the line: its verdict is the unreadable one
    assert third["tool_calls"][0]["output"] == "lone \ufffd surrogate"  # shown all the same, read as Python's json reads it
    assert first["shard_file"].startswith('">')
    assert "capture_dir" not in index


def test_a_rewrite_leaves_no_detail_file_of_the_last_one(tmp_path: Path) -> None:
    run = hostile_run(tmp_path / "run")
    (run / "viewer").mkdir()
    (run / "viewer" / "rollouts-00099.js").write_text("stale")
    write_viewer(Location(str(run)))
    assert sorted(p.name for p in (run / "viewer").iterdir()) == ["index.html", "rollouts-00000.js"]


@pytest.mark.usefixtures("memfs")
def test_memory_store_gives_the_same_files(tmp_path: Path) -> None:
    run = hostile_run(tmp_path / "run")
    fs = fsspec.filesystem("memory")
    for path in run.rglob("*"):
        if path.is_file():
            fs.pipe_file(f"/remote/{path.relative_to(run)}", path.read_bytes())
    write_viewer(Location(str(run)))
    write_viewer(Location("memory://remote"))
    for name in ("index.html", "rollouts-00000.js"):
        assert fs.cat_file(f"/remote/viewer/{name}") == (run / "viewer" / name).read_bytes()
