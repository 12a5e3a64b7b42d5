"""``evidence-stage tables`` and ``evidence-stage select``: what they write, and the one-line refusals that write nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest

from evidence.tables import SCHEMA_VERSION
from flows.cli.main import main
from tests.tables_runs import check_tables, example_run

pytestmark = pytest.mark.usefixtures("prefect_server")


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory, prefect_server: str) -> Path:
    """A finished run of the example job, made without tables (as every run before them was)."""
    run = example_run(tmp_path_factory.mktemp("cli-tables") / "out")
    shutil.rmtree(run / "tables", ignore_errors=True)  # a stage that writes them itself: start from a run without
    return run


@pytest.fixture
def run(finished: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "out" / "example_job" / "runs" / "r1"
    shutil.copytree(finished, copy)
    return copy


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("evidence-stage: error: "), err
    assert err.count("\n") == 1, err
    return err


def test_tables_builds_them_once(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tables", str(run)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("rollouts: 26 rows")
    assert out[-1] == str(run / "tables")
    check_tables(run)
    before = {p.name: p.read_bytes() for p in (run / "tables").iterdir()}
    assert main(["tables", str(run)]) == 0  # asked again: they are there
    assert (
        capsys.readouterr().out == f"tables are current (schema version {SCHEMA_VERSION}): {run / 'tables'} (--replace builds them again)\n"
    )
    assert main(["tables", "--replace", str(run)]) == 0
    assert {p.name: p.read_bytes() for p in (run / "tables").iterdir()} == before
    schema = run / "tables" / "_schema.json"
    schema.write_text(json.dumps({**json.loads(schema.read_text()), "schema_version": 0}))
    assert f"already has tables/ of schema version 0 (this evidence-stage writes {SCHEMA_VERSION})" in _error(capsys, ["tables", str(run)])


def _unfinished(run: Path) -> None:
    (run / "_SUCCESS").unlink()


def _older(run: Path) -> None:
    (run / "atif" / "rejections.jsonl").unlink()


def _foreign(run: Path) -> None:
    for path in run.iterdir():
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    (run / "notes.txt").write_text("not a run")


@pytest.mark.parametrize(
    ("spoil", "says"),
    [(_unfinished, "not complete (no _SUCCESS)"), (_older, "lacks atif/rejections.jsonl"), (_foreign, "not a run directory")],
)
def test_bad_run_directories_are_refused_and_nothing_is_written(run: Path, capsys: pytest.CaptureFixture[str], spoil, says: str) -> None:
    spoil(run)
    assert says in _error(capsys, ["tables", str(run)])
    assert not (run / "tables").exists()
    assert says in _error(capsys, ["select", str(run), "--verdict", "healthy", "--output", str(run.parent / "picked.jsonl")])
    assert not (run.parent / "picked.jsonl").exists()


def _expected(run: Path, verdict: str, agent: str | None = None, min_reward: float | None = None) -> list[bytes]:
    """The main rows with that verdict, agent and reward, by the verdict file's (unique here) identities."""
    verdicts = {}
    for line in (run / "health" / "rollout_verdicts.jsonl").read_bytes().splitlines():
        v = orjson.loads(line)
        verdicts[(v["_ng_task_index"], v["_ng_rollout_index"])] = v["verdict"]
    kept = []
    for line in (run / "rollouts.jsonl").read_bytes().splitlines():
        row = orjson.loads(line)
        if verdicts[(row["_ng_task_index"], row["_ng_rollout_index"])] != verdict:
            continue
        if agent is not None and row["agent_ref"]["name"] != agent:
            continue
        if min_reward is not None and not row.get("reward", -1) >= min_reward:
            continue
        kept.append(line)
    return kept


@pytest.mark.parametrize(
    "options",
    [
        {"verdict": "healthy"},
        {"verdict": "unhealthy"},
        {"verdict": "healthy", "min_reward": 1.0},
        {"verdict": "healthy", "agent": "chat_agent"},
    ],
)
def test_select_writes_the_matching_rows_in_input_order(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], options: dict
) -> None:
    assert main(["tables", str(run)]) == 0
    capsys.readouterr()
    argv = ["select", str(run), "--verdict", options["verdict"], "--output", str(tmp_path / "picked.jsonl")]
    if "agent" in options:
        argv += ["--agent", options["agent"]]
    if "min_reward" in options:
        argv += ["--min-reward", str(options["min_reward"])]
    assert main(argv) == 0
    expected = _expected(run, **options)
    assert expected, "the example job has such rows"
    assert (tmp_path / "picked.jsonl").read_bytes() == b"".join(line + b"\n" for line in expected)
    assert capsys.readouterr().out.splitlines()[0] == f"{len(expected)} rollouts selected"


def test_select_needs_current_tables_and_an_output_outside_the_run(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    picked = tmp_path / "picked.jsonl"
    assert "no tables/" in _error(capsys, ["select", str(run), "--verdict", "healthy", "--output", str(picked)])
    assert main(["tables", str(run)]) == 0
    schema = run / "tables" / "_schema.json"
    schema.write_text(json.dumps({**json.loads(schema.read_text()), "schema_version": 0}))
    assert "schema version 0" in _error(capsys, ["select", str(run), "--verdict", "healthy", "--output", str(picked)])
    assert main(["tables", "--replace", str(run)]) == 0
    assert "inside the run directory" in _error(capsys, ["select", str(run), "--verdict", "healthy", "--output", str(run / "picked.jsonl")])
    assert not picked.exists()
    assert not (run / "picked.jsonl").exists()
    with pytest.raises(SystemExit) as exited:
        main(["select", str(run), "--verdict", "fine", "--output", str(picked)])
    assert exited.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
