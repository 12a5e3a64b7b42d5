"""The tables of real runs (as the stage writes them, and rebuilt from their outputs): row counts and keys equal the sources,
every join matches, a rebuild gives the stage's bytes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import fsspec
import orjson
import pyarrow.parquet as pq
import pytest

from evidence.tables import SCHEMA_FILE, TABLES
from tasks.storage import Location
from tasks.tables.build import TablesError, build_from_outputs
from tests.tables_runs import check_tables, read_tables

NAMES = ("example", "realistic", "hostile", "sharded", "all_or_nothing")


def _copy(run: Path, to: Path) -> Path:
    shutil.copytree(run, to)
    shutil.rmtree(to / "tables")
    shutil.rmtree(to / "viewer")
    return to


def _files(run: Path, folder: str) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted((run / folder).iterdir())}


@pytest.mark.parametrize("name", NAMES)
def test_a_rebuild_from_the_outputs_gives_the_stages_bytes(runs_with_tables: dict[str, Path], name: str, tmp_path: Path) -> None:
    run = runs_with_tables[name]
    copy = _copy(run, tmp_path / "r")
    build_from_outputs(Location(str(copy)), *_ids(copy))
    for folder in ("tables", "viewer"):
        assert _files(copy, folder) == _files(run, folder), folder


def _ids(run: Path) -> tuple[str, str]:
    head = json.loads((run / "manifest.json").read_text())["run"]
    return head["job_id"], head["run_id"]


@pytest.mark.parametrize("name", NAMES)
def test_tables_equal_their_sources(runs_with_tables: dict[str, Path], name: str) -> None:
    check_tables(runs_with_tables[name])


def test_example_job_counts(example_tables: Path) -> None:
    rows = {name: table.num_rows for name, table in read_tables(example_tables).items()}
    assert rows == {"rollouts": 26, "turns": 81, "model_calls": 100, "tool_calls": 61, "findings": 11, "gaps": 14}


def test_sharded_job_keys_name_their_shard(runs_with_tables: dict[str, Path]) -> None:
    run = runs_with_tables["sharded"]
    rollouts = read_tables(run)["rollouts"].to_pylist()
    shards = [s["file"] for s in json.loads((run / "manifest.json").read_text())["shards"]]
    assert len(shards) == 3
    assert {r["shard"] for r in rollouts} == {0, 1, 2}
    for r in rollouts:
        assert r["attempt_key"].split(":")[0] == str(r["shard"])
        assert r["shard_file"] == shards[r["shard"]]
    assert len({r["attempt_key"] for r in rollouts}) == len(rollouts)


def test_all_or_nothing_failure_withholds_every_file(runs_with_tables: dict[str, Path]) -> None:
    run = runs_with_tables["all_or_nothing"]
    assert (run / "atif" / "error.txt").exists()
    main = [r for r in read_tables(run)["rollouts"].to_pylist() if r["source"] == "main"]
    assert {r["atif_status"] for r in main} == {"refused", "withheld"}
    assert all(r["atif_file"] is None for r in main)


def test_rebuild_is_byte_identical_and_row_groups_bound_memory(example_tables: Path, tmp_path: Path) -> None:
    copy = _copy(example_tables, tmp_path / "r1")
    build_from_outputs(Location(str(copy)), *_ids(copy), row_group_rows=7)
    for name, table in TABLES.items():
        small, default = pq.ParquetFile(copy / "tables" / table.file), pq.ParquetFile(example_tables / "tables" / table.file)
        assert all(small.metadata.row_group(i).num_rows <= 7 for i in range(small.metadata.num_row_groups)), name
        assert small.read().equals(default.read()), name
    build_from_outputs(Location(str(copy)), *_ids(copy))
    for name in [*TABLES, SCHEMA_FILE.removesuffix(".json")]:
        file = f"{name}.parquet" if name in TABLES else SCHEMA_FILE
        assert (copy / "tables" / file).read_bytes() == (example_tables / "tables" / file).read_bytes(), file


def test_builds_on_any_store(example_tables: Path, memfs: None) -> None:
    """Through the storage layer only: a run directory on memory:// gets the same bytes."""
    fs = fsspec.filesystem("memory")
    for path in example_tables.rglob("*"):
        if path.is_file() and "tables" not in path.relative_to(example_tables).parts:
            fs.pipe_file(f"/run/{path.relative_to(example_tables)}", path.read_bytes())
    build_from_outputs(Location("memory://run"), *_ids(example_tables))
    for table in TABLES.values():
        assert fs.cat_file(f"/run/tables/{table.file}") == (example_tables / "tables" / table.file).read_bytes()
    assert fs.cat_file(f"/run/tables/{SCHEMA_FILE}") == (example_tables / "tables" / SCHEMA_FILE).read_bytes()


def test_builds_on_s3(example_tables: Path, s3: str) -> None:
    """On S3 (moto): every table one atomic upload, the same bytes as on local disk."""
    import s3fs

    fs = s3fs.S3FileSystem()
    fs.mkdir("results")
    for path in example_tables.rglob("*"):
        if path.is_file() and "tables" not in path.relative_to(example_tables).parts:
            fs.pipe_file(f"results/run/{path.relative_to(example_tables)}", path.read_bytes())
    summary = build_from_outputs(Location("s3://results/run"), *_ids(example_tables))
    assert summary.folder == "s3://results/run/tables"
    for table in TABLES.values():
        assert fs.cat_file(f"results/run/tables/{table.file}") == (example_tables / "tables" / table.file).read_bytes()


def test_a_row_whose_health_digest_failed_has_no_verdict(example_tables: Path, tmp_path: Path) -> None:
    copy = _copy(example_tables, tmp_path / "r1")
    manifest = json.loads((copy / "manifest.json").read_text())
    victim = manifest["attempts"][4]
    victim["reason"] = "ValueError: boom (in health checks)"
    (copy / "manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    row = orjson.loads((copy / "rollouts.jsonl").read_bytes().splitlines()[4])
    verdicts = (copy / "health" / "rollout_verdicts.jsonl").read_bytes().splitlines(keepends=True)
    kept = [
        v
        for v in verdicts
        if (orjson.loads(v)["_ng_task_index"], orjson.loads(v)["_ng_rollout_index"]) != (row["_ng_task_index"], row["_ng_rollout_index"])
    ]
    assert len(kept) == len(verdicts) - 1
    (copy / "health" / "rollout_verdicts.jsonl").write_bytes(b"".join(kept))
    build_from_outputs(Location(str(copy)), *_ids(copy))
    rollouts = read_tables(copy)["rollouts"].to_pylist()
    assert rollouts[4]["verdict"] is None
    assert rollouts[4]["finding_count"] is None
    assert sum(r["verdict"] is not None for r in rollouts) == len(kept)


def _tamper_rows(copy: Path) -> None:
    rows = (copy / "rollouts.jsonl").read_bytes()
    (copy / "rollouts.jsonl").write_bytes(rows + rows.splitlines(keepends=True)[0])


def _tamper_verdicts(copy: Path) -> None:
    lines = (copy / "health" / "rollout_verdicts.jsonl").read_bytes().splitlines(keepends=True)
    (copy / "health" / "rollout_verdicts.jsonl").write_bytes(b"".join(lines[1:]))


def _tamper_rejections(copy: Path) -> None:
    (copy / "atif" / "rejections.jsonl").write_bytes(b'{"line": 999, "rollout_id": "x", "error": "e"}\n')


def _drop_rejections(copy: Path) -> None:
    (copy / "atif" / "rejections.jsonl").unlink()


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (_tamper_rows, "more rows than manifest.json"),
        (_tamper_verdicts, "rollout_verdicts.jsonl"),
        (_tamper_rejections, "rejections.jsonl"),
        (_drop_rejections, "lacks atif/rejections.jsonl"),
    ],
)
def test_outputs_that_disagree_are_refused_and_nothing_is_written(example_tables: Path, tmp_path: Path, tamper, message: str) -> None:
    copy = _copy(example_tables, tmp_path / "r1")
    tamper(copy)
    with pytest.raises(TablesError, match=message):
        build_from_outputs(Location(str(copy)), *_ids(copy))
    assert not (copy / "tables").exists()


def test_the_callers_ids_must_be_the_manifests(example_tables: Path, tmp_path: Path) -> None:
    copy = _copy(example_tables, tmp_path / "r1")
    with pytest.raises(TablesError, match="not run 'r2'"):
        build_from_outputs(Location(str(copy)), "example_job", "r2")
