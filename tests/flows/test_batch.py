"""The bucket flow over moto S3: finds jobs, skips current ones, reprocesses what changed."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
import s3fs

import flows.batch
from flows.batch import batch_flow
from flows.cli.main import main
from flows.params.batch import BatchParams
from flows.params.stage import StageParams
from tasks.inputs.naming import job_id_for
from tasks.storage import Location
from tests.conftest import SAMPLES
from tests.flows.support import run_stage

pytestmark = pytest.mark.usefixtures("prefect_server")

BUCKET = "s3://evals"
JOB = SAMPLES / "realistic_job"


def upload_job(fs: s3fs.S3FileSystem, folder: str) -> str:
    """The sample job under ``s3://evals/jobs/<folder>/``; returns its rollouts URL."""
    fs.put(str(JOB / "rollouts.jsonl"), f"evals/jobs/{folder}/rollouts.jsonl")
    for capture in sorted((JOB / "model-calls").iterdir()):
        fs.put(str(capture), f"evals/jobs/{folder}/model-calls/{capture.name}")
    return f"{BUCKET}/jobs/{folder}/rollouts.jsonl"


@pytest.fixture
def bucket(s3: str) -> s3fs.S3FileSystem:
    fs = s3fs.S3FileSystem()
    fs.mkdir("evals")
    return fs


def read_summary(result: dict) -> dict:
    return orjson.loads(Location(result["summary_url"]).read_bytes())


def test_batch_processes_two_and_skips_the_complete_job(bucket: s3fs.S3FileSystem) -> None:
    urls = {name: upload_job(bucket, name) for name in ("job-a", "job-b", "job-c")}
    bucket.pipe("evals/jobs/job-c/rollouts_failures.jsonl", b"")  # a sidecar is not a candidate
    done = run_stage(rollouts=urls["job-b"], capture_dir=f"{BUCKET}/jobs/job-b/model-calls", output=f"{BUCKET}/out")

    result = batch_flow(BatchParams(prefix=f"{BUCKET}/jobs", output=f"{BUCKET}/out", max_concurrency=2))

    assert result["counts"] == {"jobs": 3, "processed": 2, "skipped": 1, "failed": 0, "skipped_folders": 0}
    by_job = {entry["job_id"]: entry for entry in result["jobs"]}
    assert set(by_job) == {job_id_for(url) for url in urls.values()}
    skipped = by_job[job_id_for(urls["job-b"])]
    assert (skipped["status"], skipped["run_id"]) == ("skipped", done["run_id"])
    for name in ("job-a", "job-c"):
        entry = by_job[job_id_for(urls[name])]
        assert (entry["status"], entry["reason"]) == ("processed", "no complete run")
        assert bucket.exists(f"{entry['run_dir'].removeprefix('s3://')}/_SUCCESS")
        assert bucket.cat(f"evals/out/{entry['job_id']}/LATEST").decode().strip() == entry["run_id"]
    assert read_summary(result) == {k: v for k, v in result.items() if k != "summary_url"}
    assert result["summary_url"] == f"{BUCKET}/out/batches/{result['batch_run_id']}.json"


def test_batch_reprocesses_changed_inputs_and_config_and_everything_when_forced(bucket: s3fs.S3FileSystem) -> None:
    urls = {name: upload_job(bucket, name) for name in ("job-a", "job-b")}
    params = BatchParams(prefix=f"{BUCKET}/jobs", output=f"{BUCKET}/out")
    first = batch_flow(params)
    assert first["counts"]["processed"] == 2

    bucket.pipe("evals/jobs/job-a/model-calls/0-9.capture.jsonl", b"")
    again = {e["job_id"]: e for e in batch_flow(params)["jobs"]}
    assert (again[job_id_for(urls["job-a"])]["status"], again[job_id_for(urls["job-a"])]["reason"]) == ("processed", "inputs changed")
    assert again[job_id_for(urls["job-b"])]["status"] == "skipped"

    reconfigured = batch_flow(params.model_copy(update={"ignored_checks": ["model_call_failed"]}))
    assert {(e["status"], e["reason"]) for e in reconfigured["jobs"]} == {("processed", "config changed")}

    forced = batch_flow(params.model_copy(update={"force": True, "ignored_checks": ["model_call_failed"]}))
    assert {(e["status"], e["reason"]) for e in forced["jobs"]} == {("processed", "forced")}


def test_batch_reports_ambiguous_folders_and_a_failing_job_without_failing(
    bucket: s3fs.S3FileSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    good, bad = upload_job(bucket, "good"), upload_job(bucket, "bad")
    upload_job(bucket, "two")
    bucket.pipe("evals/jobs/two/second.jsonl", b"{}\n")
    real_stage_flow = flows.batch.stage_flow

    def failing_for_bad(params: StageParams) -> dict:
        if params.rollouts == bad:
            raise RuntimeError("storage exploded")
        return real_stage_flow(params)

    monkeypatch.setattr(flows.batch, "stage_flow", failing_for_bad)
    result = batch_flow(BatchParams(prefix=f"{BUCKET}/jobs", output=f"{BUCKET}/out"))

    assert result["skipped_folders"] == [
        {"folder": "two", "reason": "ambiguous: 2 rollouts files", "candidates": ["rollouts.jsonl", "second.jsonl"]}
    ]
    assert result["counts"] == {"jobs": 2, "processed": 1, "skipped": 0, "failed": 1, "skipped_folders": 1}
    by_job = {entry["job_id"]: entry for entry in read_summary(result)["jobs"]}
    assert by_job[job_id_for(bad)]["reason"] == "RuntimeError: storage exploded"
    assert by_job[job_id_for(good)]["status"] == "processed"


def test_batch_command_prints_each_job_and_exits_1_only_when_a_job_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(JOB, tmp_path / "jobs" / "local-job")
    args = ["batch", str(tmp_path / "jobs"), "--output", str(tmp_path / "out"), "--max-concurrency", "1"]
    assert main(args) == 0
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert printed.count("processed") == 1
    assert printed.count("skipped") == 1
    assert "summary: " in printed

    def failing(params: StageParams) -> dict:
        raise RuntimeError("no")

    monkeypatch.setattr(flows.batch, "stage_flow", failing)
    assert main([*args, "--force"]) == 1
