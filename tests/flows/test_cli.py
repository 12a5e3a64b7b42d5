"""The command line's refusals: one line ``evidence-stage: error: ...``, exit 2, nothing written.

Every check here runs before a flow starts (no Prefect server is needed): a run that is
refused must not have claimed its run directory.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flows.cli.main import main
from flows.params.batch import BatchParams
from flows.params.stage import StageParams
from tests.conftest import EXAMPLE_JOB


@pytest.fixture
def job(tmp_path: Path) -> Path:
    """A copy of the example job (a refused check must not leave anything in it either)."""
    return Path(shutil.copytree(EXAMPLE_JOB, tmp_path / "job"))


def _run(job: Path, output: str, *extra: str) -> list[str]:
    return ["run", "--rollouts", str(job / "rollouts.jsonl"), "--capture-dir", str(job / "model-calls"), "--output", output, *extra]


def _refusal(argv: list[str], capsys: pytest.CaptureFixture[str], prefix: str = "evidence-stage: error: ") -> str:
    """The one stderr line of a refused command (exit 2), without its prefix."""
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    assert code == 2, captured
    assert captured.err.startswith(prefix), captured.err
    assert captured.err.count("\n") == 1, captured.err
    return captured.err.removeprefix(prefix).rstrip("\n")


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--rollouts", "r.jsonl"],
        ["run", "--rollouts", "r", "--capture-dir", "c", "--output", "o", "--attempts-per-task", "many"],
        ["run", "--rollouts", "r", "--capture-dir", "c", "--output", "o", "--task-runner", "gpu"],
        ["no-such-command"],
        [],
        ["batch", "--output", "o"],
    ],
)
def test_usage_errors_are_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert "usage" not in _refusal(argv, capsys)


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["health", "only-one-argument"], "health"),
        (["health", "r", "o", "--ignore-check", "a,,b"], "health"),
        (["export-atif", "--rollouts", "r"], "export-atif"),
    ],
)
def test_dropin_usage_errors_are_one_line_with_0_7_0_prefix(argv: list[str], command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert "usage" not in _refusal(argv, capsys, prefix=f"evidence-stage {command}: error: ")


def test_a_missing_failures_sidecar_is_refused_before_the_run_is_claimed(
    job: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    reason = _refusal(_run(job, str(out), "--failures", str(job / "typo_failures.jsonl"), "--run-id", "r1"), capsys)
    assert reason.endswith(f"{job / 'typo_failures.jsonl'}: failures sidecar not found")
    assert _files(out) == []


def test_run_id_and_resume_of_another_run_contradict(job: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reason = _refusal(_run(job, str(tmp_path / "out"), "--run-id", "r3", "--resume", "r1"), capsys)
    assert reason.startswith("run_id 'r3' contradicts resume 'r1'")


@pytest.mark.parametrize("run_id", ["r²", "ｒ1", "run١", "ß", "r\u00e91"])  # noqa: RUF001  # look-alikes of ASCII, on purpose
def test_ids_are_ascii(run_id: str, job: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for option in ("--run-id", "--job-id", "--resume"):
        reason = _refusal(_run(job, str(tmp_path / "out"), option, run_id), capsys)
        assert reason.startswith(f"invalid parameter {option[2:].replace('-', '_')}: must be ASCII letters"), reason
    assert _files(tmp_path / "out") == []


@pytest.mark.parametrize(("option", "value"), [("--session-id", " "), ("--agent-version", "\t")])
def test_a_whitespace_atif_identity_is_refused_as_0_7_0_refuses_its_configuration(
    option: str, value: str, job: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reason = _refusal(_run(job, str(tmp_path / "out"), option, value), capsys)
    assert reason == f"invalid parameter {option[2:].replace('-', '_')}: must contain a non-whitespace character"
    assert _files(tmp_path / "out") == []


@pytest.mark.parametrize("ignored", [["bogus_check"], ["model_call_failed,bogus_check"], ["model_call_failed", "zzz,bogus_check"]])
def test_unknown_ignored_checks_are_refused_with_0_7_0_message(
    ignored: list[str], job: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options = [arg for value in ignored for arg in ("--ignore-check", value)]
    reason = _refusal(_run(job, str(tmp_path / "out"), *options), capsys)
    unknown = sorted(part for value in ignored for part in value.split(",") if part != "model_call_failed")
    assert reason == f"invalid parameter ignored_checks: Unknown rollout health check(s): {', '.join(unknown)}"
    assert _files(tmp_path / "out") == []


def test_ignored_checks_follow_the_health_dropin_rule_everywhere() -> None:
    """Split on commas, stripped, first kept; the deployments and the form take StageParams and BatchParams."""
    common = {"rollouts": "r.jsonl", "capture_dir": "c", "output": "o"}
    given = ["model_call_failed,record_unreadable", " model_call_failed "]
    assert StageParams(**common, ignored_checks=given).ignored_checks == ["model_call_failed", "record_unreadable"]
    assert BatchParams(prefix="p", output="o", ignored_checks=given).ignored_checks == ["model_call_failed", "record_unreadable"]
    for bad, message in ((["bogus_check"], "Unknown rollout health check"), (["model_call_failed,"], "without empty entries")):
        with pytest.raises(ValueError, match=message):
            StageParams(**common, ignored_checks=bad)
        with pytest.raises(ValueError, match=message):
            BatchParams(prefix="p", output="o", ignored_checks=bad)
    form = StageParams.model_json_schema()["properties"]["ignored_checks"]["description"]
    assert "alias" not in form
    assert "comma" in form
    assert "unknown id" in form.lower()


@pytest.mark.parametrize("where", ["model-calls", "model-calls/out", ".", "results", "./model-calls/../results"])
def test_an_output_among_the_inputs_is_refused(where: str, job: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _files(job)
    reason = _refusal(_run(job, f"{job}/{where}"), capsys)
    assert "overlap (inputs are read-only)" in reason
    assert _files(job) == before


def test_an_output_beside_relative_inputs_is_refused(
    job: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run from inside the job folder, ``--output results`` is inside the rollouts' folder."""
    monkeypatch.chdir(job)
    argv = ["run", "--rollouts", "rollouts.jsonl", "--capture-dir", "model-calls", "--output", "results"]
    assert "overlap (inputs are read-only)" in _refusal(argv, capsys)
    assert not (job / "results").exists()


def test_an_output_job_directory_that_is_the_input_folder_is_refused(job: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "overlap" in _refusal(_run(job, str(job.parent), "--job-id", job.name), capsys)


def test_an_s3_output_among_the_inputs_is_refused(s3: str, capsys: pytest.CaptureFixture[str]) -> None:
    import s3fs

    fs = s3fs.S3FileSystem()
    fs.mkdir("jobs")
    fs.put(str(EXAMPLE_JOB) + "/", "jobs/evals/job", recursive=True)
    before = sorted(fs.find("jobs"))
    for output in ("s3://jobs/evals/job/model-calls/out", "s3://jobs/evals/job", "s3://jobs//evals/job/results/"):
        argv = [
            "run",
            "--rollouts",
            "s3://jobs/evals/job/rollouts.jsonl",
            "--capture-dir",
            "s3://jobs/evals/job/model-calls",
            "--output",
            output,
        ]
        assert "overlap (inputs are read-only)" in _refusal(argv, capsys)
    fs.invalidate_cache()
    assert sorted(fs.find("jobs")) == before


@pytest.mark.parametrize(("given", "kept"), [(None, "120"), ("7", "7")])
def test_the_ephemeral_server_gets_two_minutes_to_start_unless_the_user_says(
    given: str | None, kept: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Prefect's 20 s were too few for a first start on a busy machine; a user's own value stands."""
    import os

    from flows.cli.main import EPHEMERAL_STARTUP_TIMEOUT

    if given is None:
        monkeypatch.delenv(EPHEMERAL_STARTUP_TIMEOUT, raising=False)
    else:
        monkeypatch.setenv(EPHEMERAL_STARTUP_TIMEOUT, given)
    with pytest.raises(SystemExit):
        main(["run"])  # a usage error: nothing runs
    assert os.environ[EPHEMERAL_STARTUP_TIMEOUT] == kept
    capsys.readouterr()
