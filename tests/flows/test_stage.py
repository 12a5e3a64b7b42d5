"""The stage flow end to end on a real Prefect server: samples, example job, S3, errors."""

from __future__ import annotations

import functools
import json
import operator
import os
import re
import shutil
from pathlib import Path

import orjson
import pytest

from evidence import AtifExportError, export_rollouts, key_metrics
from evidence.atif import MULTIPLE_AGENTS_MESSAGE
from evidence.models.atif import Exporter
from flows.execution.resolve import package_version
from tasks.attempts.context import EXPORTER_NAME
from tasks.attempts.parts import segment_parts
from tests.conformance.conftest import strict_diff
from tests.conftest import EXAMPLE_JOB, SAMPLES
from tests.flows.support import local_path, run_outputs, run_stage, tree_digest

pytestmark = pytest.mark.usefixtures("prefect_server")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _without_exporter(document: dict) -> dict:
    document = json.loads(json.dumps(document))
    document["extra"]["nemo_gym"].pop("exporter", None)
    return document


@pytest.mark.parametrize("sample", ["realistic_job", "hostile_job"])
def test_sample_job_reproduces_0_7_0(sample: str, tmp_path: Path) -> None:
    job, expected = SAMPLES / sample, SAMPLES / f"{sample}.expected"
    before = tree_digest(str(job))
    result = run_stage(
        rollouts=str(job / "rollouts.jsonl"),
        capture_dir=str(job / "model-calls"),
        output=str(tmp_path),
        session_id="sample",
        agent_version="1.0.0",
    )
    run = local_path(result["run_dir"])
    assert tree_digest(str(job)) == before, "inputs must be byte-identical after a run"
    for name in ("rollouts.jsonl", "rollouts_failures.jsonl"):
        if (expected / name).exists():
            actual_rows, expected_rows = _rows(run / name), _rows(expected / name)
            assert len(actual_rows) == len(expected_rows)
            for number, (actual, wanted) in enumerate(zip(actual_rows, expected_rows, strict=False), start=1):
                assert strict_diff(actual, wanted) is None, f"{name} line {number}"
    for name in ("health/quality_summary.json", "health/rollout_verdicts.jsonl"):
        assert (run / name).read_bytes() == (expected / name).read_bytes(), name
    perf = json.loads((run / "perf_summary.json").read_text())
    assert strict_diff(perf["run"], json.loads((expected / "perf_summary_run.json").read_text())) is None
    rejections = {r["line"]: r for r in map(json.loads, (run / "atif/rejections.jsonl").read_text().splitlines())}
    manifest = [json.loads(line) for line in (run / "atif/manifest.jsonl").read_text().splitlines()]
    exported = [_without_exporter(json.loads((run / "atif" / entry["trajectory_path"]).read_text())) for entry in manifest]
    for line, outcome in enumerate(map(json.loads, (expected / "atif_rows.jsonl").read_text().splitlines()), start=1):
        if outcome["ok"]:
            assert line not in rejections
            wanted = _without_exporter(outcome["atif"])
            assert any(strict_diff(doc, wanted) is None for doc in exported), f"atif row {line}"
        else:
            assert rejections[line]["error"] == outcome["error"].split(": ", 1)[1]
    assert (run / "_SUCCESS").exists()
    assert (tmp_path / result["run_dir"].split("/")[-3] / "LATEST").read_text() == result["run_id"] + "\n"


def test_example_job_is_reproducible_and_grouping_independent(tmp_path: Path) -> None:
    common = {"rollouts": str(EXAMPLE_JOB / "rollouts.jsonl"), "capture_dir": str(EXAMPLE_JOB / "model-calls"), "output": str(tmp_path)}
    one = run_stage(**common, attempts_per_task=1)
    whole = run_stage(**common, attempts_per_task=500)
    assert one["run_dir"] != whole["run_dir"]
    assert run_outputs(one["run_dir"]) == run_outputs(whole["run_dir"])
    manifest = orjson.loads((local_path(whole["run_dir"]) / "manifest.json").read_bytes())
    assert manifest["counts"]["orphans"] >= 1
    assert manifest["run"]["scope"] == "full"
    assert manifest["timings"]["report_s"] <= manifest["timings"]["tail_s"]  # the report is written after the last attempt


def test_parts_are_removed_once_the_run_is_published_unless_kept(tmp_path: Path) -> None:
    common = {"rollouts": str(EXAMPLE_JOB / "rollouts.jsonl"), "capture_dir": str(EXAMPLE_JOB / "model-calls"), "attempts_per_task": 4}
    removed = local_path(run_stage(**common, output=str(tmp_path / "default"))["run_dir"])
    kept = local_path(run_stage(**common, output=str(tmp_path / "kept"), keep_parts=True)["run_dir"])
    assert (removed / "_SUCCESS").exists()
    assert not (removed / "attempts").exists()
    manifest = orjson.loads((kept / "manifest.json").read_bytes())
    parts = [part for segment in (kept / "attempts").rglob("*.seg") for part in segment_parts(segment.read_bytes())]
    assert len(parts) == manifest["counts"]["attempts"]
    assert run_outputs(str(removed)) == run_outputs(str(kept))


def test_s3_run_equals_local_run(s3: str, tmp_path: Path) -> None:
    import s3fs

    fs = s3fs.S3FileSystem()
    fs.mkdir("jobs")
    fs.mkdir("results")
    fs.put(str(EXAMPLE_JOB), "jobs/example_job", recursive=True)
    before = tree_digest("s3://jobs/example_job")
    remote = run_stage(
        rollouts="s3://jobs/example_job/rollouts.jsonl",
        capture_dir="s3://jobs/example_job/model-calls",
        output="s3://results/out",
        job_id="example",
        session_id="s",
        agent_version="1",
    )
    local = run_stage(
        rollouts=str(EXAMPLE_JOB / "rollouts.jsonl"),
        capture_dir=str(EXAMPLE_JOB / "model-calls"),
        output=str(tmp_path),
        job_id="example",
        session_id="s",
        agent_version="1",
    )
    assert tree_digest("s3://jobs/example_job") == before
    remote_outputs, local_outputs = run_outputs(remote["run_dir"]), run_outputs(local["run_dir"])
    assert remote_outputs.pop("params.json") != local_outputs.pop("params.json")  # it records the input URLs
    assert remote_outputs == local_outputs
    assert fs.cat_file("results/out/example/LATEST").decode() == remote["run_id"] + "\n"


def test_report_command_regenerates_the_same_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from flows.cli.main import main

    result = run_stage(rollouts=str(EXAMPLE_JOB / "rollouts.jsonl"), capture_dir=str(EXAMPLE_JOB / "model-calls"), output=str(tmp_path))
    page = local_path(result["run_dir"]) / "report.html"
    original = page.read_bytes()
    page.unlink()
    assert main(["report", result["run_dir"]]) == 0
    assert page.read_bytes() == original  # the reward histogram too, rebuilt from rollouts.jsonl
    rows = _rows(local_path(result["run_dir"]) / "rollouts.jsonl")
    rewards = original.decode().split('aria-label="Reward per rollout (raw)"')[1].split("</svg>")[0]
    assert sum(int(n) for n in re.findall(r'data-count="(\d+)"', rewards)) == sum(isinstance(r.get("reward"), (int, float)) for r in rows)
    scores = json.loads((local_path(result["run_dir"]) / "scores.json").read_text())
    assert result["scores"] == key_metrics(scores)  # the CLI summary's scores
    assert result["scores"]["claude_code_agent"]["mean/reward"] == {"raw": 0.5, "clean": None}  # its 4 rollouts are unhealthy
    assert capsys.readouterr().out.strip().endswith("report.html")


def test_a_retried_reduce_records_each_attempt_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reduce fails once on a transient error after its first pass; Prefect's retry starts over."""
    import tasks.reduce.outputs
    from tasks.storage import TransientStorageError

    common = {"rollouts": str(EXAMPLE_JOB / "rollouts.jsonl"), "capture_dir": str(EXAMPLE_JOB / "model-calls")}
    clean = run_stage(**common, output=str(tmp_path / "clean"))
    write_perf, failed = tasks.reduce.outputs.write_perf, []

    def fail_once(*args: object) -> list[str]:
        if not failed:
            failed.append(True)
            raise TransientStorageError("s3://x/perf_summary.json", "503 SlowDown")
        return write_perf(*args)

    monkeypatch.setattr(tasks.reduce.outputs, "write_perf", fail_once)
    retried = run_stage(**common, output=str(tmp_path / "retried"))
    assert failed
    assert run_outputs(retried["run_dir"]) == run_outputs(clean["run_dir"])
    manifest = orjson.loads((local_path(retried["run_dir"]) / "manifest.json").read_bytes())
    keys = [entry["key"] for entry in manifest["attempts"]]
    assert len(keys) == len(set(keys)) == manifest["counts"]["attempts"] == clean["counts"]["attempts"]


def test_verdicts_of_an_unreadable_record_do_not_depend_on_the_run(tmp_path: Path) -> None:
    job = tmp_path / "job"
    shutil.copytree(EXAMPLE_JOB, job)
    row = json.loads((job / "rollouts.jsonl").read_text(encoding="utf-8").splitlines()[0])
    row["_ng_task_index"] = [row["_ng_task_index"]]  # an identity health cannot type: record_unreadable
    with (job / "rollouts.jsonl").open("a", encoding="utf-8") as rollouts:
        rollouts.write(json.dumps(row) + "\n")
    common = {"rollouts": str(job / "rollouts.jsonl"), "capture_dir": str(job / "model-calls"), "output": str(tmp_path / "out")}

    first, second = run_stage(**common), run_stage(**common)

    assert first["run_dir"] != second["run_dir"]
    verdicts = [local_path(run["run_dir"]) / "health" / "rollout_verdicts.jsonl" for run in (first, second)]
    lines = verdicts[0].read_text(encoding="utf-8").splitlines()
    findings = [finding for verdict in map(json.loads, lines) for finding in verdict["findings"]]
    locators = [finding["locator"] for finding in findings if finding["check"] == "record_unreadable"]
    assert locators == [{"source_file": "rollouts.jsonl", "line": 25}]
    assert verdicts[0].read_bytes() == verdicts[1].read_bytes()


def test_latest_follows_finish_time_not_run_id_order(tmp_path: Path) -> None:
    """Custom run ids: ``dask2`` sorts before ``default1``, and a timestamped id before ``r4``."""
    common = {
        "rollouts": str(EXAMPLE_JOB / "rollouts.jsonl"),
        "capture_dir": str(EXAMPLE_JOB / "model-calls"),
        "output": str(tmp_path),
        "job_id": "example",
    }
    latest = tmp_path / "example" / "LATEST"
    for run_id in ("default1", "dask2", "r4", "20261201T000000Z-0a1b2c"):
        run_stage(**common, run_id=run_id)
        assert latest.read_text() == run_id + "\n"
    run_stage(**common, run_id="subset", rollout_ids=["0-0"])
    assert latest.read_text() == "20261201T000000Z-0a1b2c\n", "a subset run never becomes LATEST"


def test_a_capture_dir_file_name_that_is_not_utf8_is_reported_as_an_orphan(tmp_path: Path) -> None:
    job = Path(shutil.copytree(EXAMPLE_JOB, tmp_path / "job"))
    (Path(os.fsdecode(os.path.join(os.fsencode(job / "model-calls"), b"\xff\xfe.capture.jsonl")))).write_bytes(b"{}\n")
    result = run_stage(rollouts=str(job / "rollouts.jsonl"), capture_dir=str(job / "model-calls"), output=str(tmp_path / "out"))
    manifest = orjson.loads((local_path(result["run_dir"]) / "manifest.json").read_bytes())
    assert "\\xff\\xfe.capture.jsonl" in manifest["orphans"]
    assert "model-calls/\\xff\\xfe.capture.jsonl" in manifest["inputs"]["files"]
    assert (local_path(result["run_dir"]) / "_SUCCESS").exists()


_IDENTITY = {"session_id": "s1", "agent_version": "1.0.0"}


def _batch_error(run_dir: Path) -> str | None:
    """What 0.7.0's batch export (the ``export-atif`` drop-in) says of a run's ``rollouts.jsonl``."""
    exporter = Exporter(name=EXPORTER_NAME, version=package_version())
    try:
        export_rollouts((run_dir / "rollouts.jsonl").read_bytes(), **_IDENTITY, exporter=exporter)
    except AtifExportError as error:
        return error.message
    return None


def test_all_or_nothing_publishes_every_accepted_file_or_none(tmp_path: Path) -> None:
    """Accepted files are written as the reduce decides them, except in an all-or-nothing run,
    which publishes them only where 0.7.0's batch export of its rollouts.jsonl succeeds, and
    otherwise that export's error, word for word."""
    common = dict(
        rollouts=str(EXAMPLE_JOB / "rollouts.jsonl"), capture_dir=str(EXAMPLE_JOB / "model-calls"), output=str(tmp_path), **_IDENTITY
    )
    default_run = local_path(run_stage(**common, run_id="default")["run_dir"])
    default = default_run / "atif"
    files = sorted(path.name for path in default.glob("*.json"))
    assert files, "the example job has accepted and refused rows"
    assert (default / "rejections.jsonl").read_text(), "the example job has accepted and refused rows"

    refused_run = local_path(run_stage(**common, run_id="refused", atif_all_or_nothing=True)["run_dir"])
    assert sorted(path.name for path in (refused_run / "atif").iterdir()) == ["error.txt", "rejections.jsonl"]
    assert (refused_run / "atif" / "error.txt").read_text() == _batch_error(refused_run)

    accepted = {
        (entry["_ng_task_index"], entry["_ng_rollout_index"])
        for entry in map(json.loads, (default / "manifest.jsonl").read_text().splitlines())
    }
    rows = [json.loads(line) for line in (default_run / "rollouts.jsonl").read_text().splitlines()]
    by_agent: dict[str, list[str]] = {}
    for row in rows:
        if (row["_ng_task_index"], row["_ng_rollout_index"]) in accepted:
            by_agent.setdefault(row["agent_ref"]["name"], []).append(row["ng_model_call_capture"]["rollout_id"])
    assert len(by_agent) == 2, "the accepted rows come from two agents"

    both = local_path(
        run_stage(**common, run_id="both", atif_all_or_nothing=True, rollout_ids=functools.reduce(operator.iadd, by_agent.values(), []))[
            "run_dir"
        ]
    )
    assert (both / "atif" / "error.txt").read_text() == _batch_error(both) == MULTIPLE_AGENTS_MESSAGE

    agent, ids = max(by_agent.items(), key=lambda item: len(item[1]))
    clean = local_path(run_stage(**common, run_id="clean", atif_all_or_nothing=True, rollout_ids=ids)["run_dir"]) / "atif"
    published = sorted(path.name for path in clean.glob("*.json"))
    assert len(published) == len(ids), agent
    assert set(published) <= set(files), agent
    assert not (clean / "error.txt").exists(), agent
    assert all((clean / name).read_bytes() == (default / name).read_bytes() for name in published)
    assert len((clean / "manifest.jsonl").read_text().splitlines()) == len(published)
