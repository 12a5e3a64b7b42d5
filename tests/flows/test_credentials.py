"""Credentials never travel as flow-run parameters: refused in storage options, read from a block by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.cli.main import main
from tasks.storage import Location
from tests.conftest import EXAMPLE_JOB, example_run_argv
from tests.flows.support import run_stage

pytestmark = pytest.mark.usefixtures("prefect_server")

SECRET = "block-secret-3f9a"


@pytest.mark.parametrize("option", ["secret=abc", "key=AKIA1", 'client_kwargs={"aws_session_token": "t"}'])
def test_credential_keys_in_storage_options_are_refused_in_one_line(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            *example_run_argv(tmp_path),
            "--storage-option",
            option,
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith("evidence-stage: error: invalid parameter storage_options: ")
    assert "use the environment" in err
    assert "AwsCredentials block" in err
    assert not any(tmp_path.iterdir())


def test_a_block_s_credentials_reach_s3_but_never_the_server(s3: str, prefect_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import s3fs
    from prefect.client.orchestration import SyncPrefectClient
    from prefect_aws import AwsCredentials

    fs = s3fs.S3FileSystem()
    fs.mkdir("jobs")
    fs.put(str(EXAMPLE_JOB), "jobs/example_job", recursive=True)
    AwsCredentials(aws_access_key_id="AKIABLOCK", aws_secret_access_key=SECRET).save("stage-s3", overwrite=True)
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    s3fs.S3FileSystem.clear_instance_cache()
    with pytest.raises(Exception, match="credentials"):  # the environment no longer authenticates
        Location("s3://jobs/example_job/rollouts.jsonl").exists()
    result = run_stage(
        rollouts="s3://jobs/example_job/rollouts.jsonl",
        capture_dir="s3://jobs/example_job/model-calls",
        output="s3://jobs/out",
        job_id="with-block",
        aws_credentials_block="stage-s3",
    )
    assert Location(result["run_dir"], {"key": "AKIABLOCK", "secret": SECRET}).child("_SUCCESS").exists()
    with SyncPrefectClient(prefect_server) as client:
        runs = client.read_flow_runs()
    stored = [run.parameters for run in runs if run.parameters.get("params", {}).get("job_id") == "with-block"]
    assert [p["params"]["aws_credentials_block"] for p in stored] == ["stage-s3"]
    assert SECRET not in json.dumps([run.parameters for run in runs], default=str)


def test_a_command_without_a_flow_reads_storage_with_the_named_block_s_credentials(prefect_server: str) -> None:
    """``--aws-credentials-block`` is every storage command's (``StorageAccess``), not only the flows'."""
    from prefect_aws import AwsCredentials

    from flows.cli.main import build_parser
    from flows.cli.options import storage_options_of

    AwsCredentials(aws_access_key_id="AKIAREPORT", aws_secret_access_key=SECRET, region_name="eu-west-1").save("report-s3", overwrite=True)
    argv = [
        "report",
        "s3://evals/job/runs/r1",
        "--aws-credentials-block",
        "report-s3",
        "--storage-option",
        "endpoint_url=http://127.0.0.1:9",
    ]
    assert storage_options_of(build_parser().parse_args(argv)) == {
        "key": "AKIAREPORT",
        "secret": SECRET,
        "client_kwargs": {"region_name": "eu-west-1"},
        "endpoint_url": "http://127.0.0.1:9",
    }
    assert storage_options_of(build_parser().parse_args(argv[:2])) == {}
