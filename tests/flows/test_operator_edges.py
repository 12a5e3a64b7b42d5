"""Operator edges (issue 35): what a new user and an operator hit, tried as they would: the real CLI in a subprocess.

A refusal is one line ``evidence-stage: error: <reason>`` on stderr, exit 2, and nothing claimed:
no run directory, no folder named after a mistyped URL, no event sent.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_JOB, REPO, free_port

PREFIX = "evidence-stage: error: "
SUPPORTED = "(supported: a local path, file://, memory://, s3://, s3a://)"


def cli(*argv: str, cwd: Path = REPO, api_url: str | None = None, timeout: float = 180, **env: str) -> subprocess.CompletedProcess[str]:
    """``evidence-stage ARGV`` in a fresh process; the session's Prefect server only when ``api_url`` is given."""
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"} | {
        "PYTHONPATH": str(REPO),
        "PREFECT_LOGGING_LEVEL": "ERROR",
    }
    environment |= ({"PREFECT_API_URL": api_url} if api_url else {}) | env
    command = [sys.executable, "-m", "flows.cli.main", *argv]
    return subprocess.run(command, check=False, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout)


def refusal(done: subprocess.CompletedProcess[str]) -> str:
    """The one error line of a refused command (exit 2), without its prefix."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(PREFIX), done.stderr
    return lines[0].removeprefix(PREFIX)


def files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


@pytest.fixture
def job(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLE_JOB, tmp_path / "job"))


def run_args(job: Path, output: str, *extra: str) -> list[str]:
    return ["run", "--rollouts", str(job / "rollouts.jsonl"), "--capture-dir", str(job / "model-calls"), "--output", output, *extra]


# 1. Silent misdirection


@pytest.mark.parametrize(
    ("option", "url", "reason"),
    [
        ("--output", "s3:/evals/x", "invalid parameter output: malformed URL 's3:/evals/x': scheme 's3' needs '://' (s3://evals/x)"),
        ("--rollouts", "s3:/x", "invalid parameter rollouts: malformed URL 's3:/x': scheme 's3' needs '://' (s3://x)"),
        ("--output", "ftp://host/x", f"invalid parameter output: unsupported URL scheme 'ftp' in 'ftp://host/x' {SUPPORTED}"),
        ("--capture-dir", "htps://x/y", f"invalid parameter capture_dir: unsupported URL scheme 'htps' in 'htps://x/y' {SUPPORTED}"),
    ],
)
def test_a_mistyped_or_unsupported_url_scheme_is_refused_naming_it(option: str, url: str, reason: str, job: Path, tmp_path: Path) -> None:
    argv = run_args(job, "out")
    argv[argv.index(option) + 1] = url
    work = tmp_path / "cwd"
    work.mkdir()
    assert refusal(cli(*argv, cwd=work)) == reason
    assert files(work) == []  # no folder ./s3: with the run in it


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "s3:/b/run"],
        ["compare", "s3:/b/a", "s3://b/b"],
        ["export", "otel", "s3:/b/run", "--endpoint", "http://c:4318"],
        ["batch", "ftp://h/jobs", "--output", "o"],
    ],
)
def test_every_command_refuses_a_mistyped_url(argv: list[str]) -> None:
    reason = refusal(cli(*argv))
    assert "malformed URL 's3:/b" in reason or "unsupported URL scheme 'ftp'" in reason


def in_mount_namespace(setup: str, argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI after the shell commands ``setup`` (mounts), as root in a mount namespace of its own; skipped where there is none."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("mounts need root and unshare")
    if subprocess.run(["unshare", "-m", "true"], check=False, capture_output=True).returncode != 0:
        pytest.skip("no mount namespace")
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"} | {"PYTHONPATH": str(REPO)} | env
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", f'{setup} && exec "$@"', "sh", sys.executable, "-m", "flows.cli.main", *argv],
        check=False,
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _read_only(folder: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """The CLI with ``folder`` read-only: as root (who writes anywhere) a read-only bind mount."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return cli(*argv)
    return in_mount_namespace(f'mount --bind "{folder}" "{folder}" && mount -o remount,ro,bind "{folder}" "{folder}"', argv)


def test_an_output_that_cannot_be_written_is_refused_before_anything(job: Path, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    reason = refusal(_read_only(locked, run_args(job, str(locked / "out"))))
    assert reason.startswith(f"{locked}/out/job-"), reason
    assert reason.endswith(
        (f": cannot be written: Read-only file system ({locked})", f": cannot be written: Permission denied ({locked})")
    ), reason
    assert files(locked) == []
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    assert refusal(cli(*run_args(job, str(not_a_folder / "out")))).endswith(f": cannot be written: {not_a_folder} is not a folder")


def test_a_missing_bucket_is_refused_before_anything(job: Path, s3: str) -> None:
    reason = refusal(cli(*run_args(job, "s3://no-such-bucket/evidence")))
    assert reason.startswith("s3://no-such-bucket/evidence/job-")
    assert reason.endswith(": cannot be written: no such bucket")


@pytest.mark.parametrize(
    ("content", "reason"),
    [(b"", "no rollout rows (empty): nothing to run"), (None, "no rollout rows: {n} non-blank lines, none a JSON object")],
)
def test_rollouts_without_a_row_are_refused_saying_how_many_lines_were_not_rows(content: bytes | None, reason: str, tmp_path: Path) -> None:
    (tmp_path / "job" / "model-calls").mkdir(parents=True)
    rollouts = tmp_path / "job" / "rollouts.jsonl"
    data = content if content is not None else bytes(range(256)) * 800  # 200 KB of every byte
    rollouts.write_bytes(data)
    lines = sum(1 for line in data.split(b"\n") if line.strip())
    got = refusal(
        cli("run", "--rollouts", str(rollouts), "--capture-dir", str(tmp_path / "job" / "model-calls"), "--output", str(tmp_path / "out"))
    )
    assert got == f"{rollouts}: " + reason.format(n=lines)
    assert not (tmp_path / "out").exists()


def test_notify_refuses_a_job_that_is_not_there(tmp_path: Path) -> None:
    """No server answers at this URL: the refusal comes before anything is sent."""
    api = f"http://127.0.0.1:{free_port()}/api"
    reason = refusal(cli("notify", "--rollouts", str(tmp_path / "r.jsonl"), "--capture-dir", str(tmp_path / "model-calls"), api_url=api))
    assert reason == f"file://{tmp_path}/r.jsonl: rollouts file not found"


def test_batch_refuses_a_prefix_that_holds_no_jobs(tmp_path: Path, s3: str) -> None:
    assert (
        refusal(cli("batch", str(tmp_path / "missing"), "--output", str(tmp_path / "out")))
        == f"{tmp_path}/missing: no such folder: no jobs to process"
    )
    (tmp_path / "rollouts.jsonl").write_text("{}\n")
    assert refusal(cli("batch", str(tmp_path / "rollouts.jsonl"), "--output", str(tmp_path / "out"))).endswith(
        "rollouts.jsonl is a file: batch takes the folder its job folders are under (run takes one job)"
    )
    assert (
        refusal(cli("batch", "s3://no-such-bucket/evals", "--output", str(tmp_path / "out"))) == "s3://no-such-bucket/evals: no such bucket"
    )
    assert not (tmp_path / "out").exists()


def test_batch_reports_a_folder_with_rollouts_but_no_captures(tmp_path: Path) -> None:
    from tasks.batch.jobs import find_jobs
    from tasks.inputs.layout import JobLayout
    from tasks.storage import Location

    shutil.copytree(EXAMPLE_JOB, tmp_path / "jobs" / "good")
    (tmp_path / "jobs" / "lonely").mkdir()
    (tmp_path / "jobs" / "lonely" / "rollouts.jsonl").write_text("{}\n")
    run_dir = tmp_path / "jobs" / "evidence" / "j" / "runs" / "r1"  # an output under the prefix is no job, and no noise
    run_dir.mkdir(parents=True)
    (run_dir / "params.json").write_text("{}")
    (run_dir / "rollouts.jsonl").write_text("{}\n")
    search = find_jobs(Location(str(tmp_path / "jobs")), JobLayout())
    assert [job.folder for job in search.jobs] == ["good"]
    assert [(s.folder, s.reason) for s in search.skipped] == [("lonely", "rollouts file(s) but no model-calls/ capture directory")]


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (
            ["--dask-address", "tcp://127.0.0.1:8786"],
            "dask_address applies to the dask task runner only (task_runner is process): add --task-runner dask",
        ),
        (
            ["--dask-workers", "4", "--task-runner", "thread"],
            "dask_workers applies to the dask task runner only (task_runner is thread): add --task-runner dask",
        ),
    ],
)
def test_dask_options_without_the_dask_runner_are_refused(extra: list[str], reason: str, job: Path, tmp_path: Path) -> None:
    assert refusal(cli(*run_args(job, str(tmp_path / "out"), *extra))) == reason


def test_an_existing_dask_cluster_must_be_reachable_and_share_the_flows_server(job: Path, tmp_path: Path, prefect_server: str) -> None:
    address = f"tcp://127.0.0.1:{free_port()}"
    argv = run_args(job, str(tmp_path / "out"), "--task-runner", "dask", "--dask-address", address)
    started = time.monotonic()
    assert refusal(cli(*argv, api_url=prefect_server)) == f"Dask scheduler {address} is not reachable: Connection refused"
    assert time.monotonic() - started < 30  # Dask's own wait was 30 s, then a 64-line traceback
    reason = refusal(cli(*argv))  # no PREFECT_API_URL: each worker would start a temporary server of its own
    assert reason.startswith("--dask-address needs a Prefect server its workers report to: set PREFECT_API_URL")
    assert files(tmp_path / "out") == []


def test_a_subset_that_selects_nothing_is_refused_and_not_kept(job: Path, tmp_path: Path, prefect_server: str) -> None:
    done = cli(
        *run_args(job, str(tmp_path / "out"), "--rollout-id", "nope", "--rollout-glob", "zz*", "--task-runner", "thread"),
        api_url=prefect_server,
    )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 2, done.stderr
    claimed, error = done.stderr.splitlines()
    assert claimed.startswith("evidence-stage: run ")
    assert error == f"{PREFIX}--rollout-id nope or --rollout-glob zz* selects no rollout of the job: nothing to run (the run was not kept)"
    assert not [p for p in (tmp_path / "out").rglob("*") if p.is_file()]


# 2. Interruption and concurrency


@pytest.fixture(scope="module")
def slow_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A job that takes a thread runner with one worker several seconds."""
    from tests.jobgen import generate_job

    root = tmp_path_factory.mktemp("slow") / "job"
    generate_job(root, rollouts=600, history_bytes=500)
    return root


def _start(argv: list[str], api_url: str | None) -> subprocess.Popen[str]:
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"} | {
        "PYTHONPATH": str(REPO),
        "PREFECT_LOGGING_LEVEL": "WARNING",
    }
    environment |= {"PREFECT_API_URL": api_url} if api_url else {}
    return subprocess.Popen(
        [sys.executable, "-m", "flows.cli.main", *argv],
        cwd=REPO,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, signalled as a terminal signals its foreground group
    )


def _claimed(process: subprocess.Popen[str]) -> str:
    """The run id of the claim line (read from stderr as soon as it is printed)."""
    assert process.stderr is not None
    line = process.stderr.readline()
    assert line.startswith("evidence-stage: run "), line
    return line.removeprefix("evidence-stage: run ").split(":", 1)[0]


def _interrupted_then_resumed(slow_job: Path, tmp_path: Path, api_url: str | None) -> None:
    argv = run_args(slow_job, str(tmp_path / "out"), "--task-runner", "thread", "--max-workers", "1", "--attempts-per-task", "20")
    process = _start(argv, api_url)
    run_id = _claimed(process)
    time.sleep(1)
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C
    _, rest = process.communicate(timeout=120)
    assert process.returncode == 130, rest
    lines = rest.splitlines()
    assert len(lines) == 1, rest  # no traceback, no "Crash detected", no event-client errors
    command = shlex.join(["evidence-stage", *argv, "--resume", run_id])
    assert lines[0] == f"evidence-stage: interrupted; run {run_id} is kept, resume it with: {command}"
    assert "Connection refused" not in rest
    (run,) = (tmp_path / "out").glob(f"*/runs/{run_id}")
    assert not (run / "LEASE").exists()  # released: the resume need not wait
    resumed = cli(*shlex.split(command)[1:], api_url=api_url, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert (run / "_SUCCESS").exists()


def test_ctrl_c_prints_the_resume_command_and_exits_130(slow_job: Path, tmp_path: Path, prefect_server: str) -> None:
    _interrupted_then_resumed(slow_job, tmp_path, prefect_server)


def test_ctrl_c_leaves_the_ephemeral_server_alone_until_the_run_said_so(slow_job: Path, tmp_path: Path) -> None:
    """The README's first command: no PREFECT_API_URL, so the run starts its own temporary server (20-30 s)."""
    _interrupted_then_resumed(slow_job, tmp_path, None)


def _servers_owned_by(pid: int) -> list[int]:
    owned = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"uvicorn" in b" ".join(argv) and str(pid).encode() in argv:
            owned.append(int(entry.name))
    return owned


def test_a_second_resume_is_refused_at_once_and_a_killed_run_is_resumed_at_once(
    slow_job: Path, tmp_path: Path, prefect_server: str
) -> None:
    argv = run_args(slow_job, str(tmp_path / "out"), "--task-runner", "thread", "--max-workers", "1", "--attempts-per-task", "20")
    first = _start(argv, prefect_server)
    run_id = _claimed(first)
    try:
        second = cli(*argv, "--resume", run_id, api_url=prefect_server)
        reason = refusal(second)
        assert reason.startswith(f"run {run_id} is in use by process {first.pid} on "), reason
        assert " since " in reason, reason
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # kill -9: its lease stays behind
        first.communicate(timeout=60)
    (run,) = (tmp_path / "out").glob(f"*/runs/{run_id}")
    assert (run / "LEASE").exists()
    assert not (run / "_SUCCESS").exists()
    resumed = cli(*argv, "--resume", run_id, api_url=prefect_server, timeout=300)  # its holder is gone: no wait for the lease to expire
    assert resumed.returncode == 0, resumed.stderr
    assert (run / "_SUCCESS").exists()
    assert not (run / "LEASE").exists()


def test_two_runs_claiming_one_run_id_at_once_give_one_line(job: Path, tmp_path: Path, prefect_server: str) -> None:
    argv = run_args(job, str(tmp_path / "out"), "--run-id", "same", "--task-runner", "thread")
    processes = [_start(argv, prefect_server) for _ in range(2)]
    outcomes = sorted((p.wait(timeout=180), p.communicate()[1]) for p in processes)
    assert [code for code, _ in outcomes] == [0, 2], outcomes
    lost = outcomes[1][1].splitlines()
    assert lost[-1].startswith(f"{PREFIX}run id already exists: "), lost
    assert len(lost) <= 2, lost  # the claim line at most, then the reason


def test_a_refused_flow_run_logs_its_reason_in_one_line(tmp_path: Path, prefect_server: str) -> None:
    """A UI-form run with a missing file: the flow run's log says why in one line, no traceback."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    from flows.params.stage import StageParams
    from flows.stage import stage_flow

    state = stage_flow(
        StageParams(rollouts=str(tmp_path / "missing.jsonl"), capture_dir=str(tmp_path), output=str(tmp_path / "out")), return_state=True
    )
    assert state.is_failed()
    assert state.message == f"file://{tmp_path}/missing.jsonl: rollouts file not found"
    deadline = time.monotonic() + 30  # logs reach the server in batches
    while True:
        with get_client(sync_client=True) as client:
            logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[state.state_details.flow_run_id])))
        errors = [log.message for log in logs if log.level >= 40]
        if errors or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert errors == [state.message]
    assert not any("Traceback" in log.message for log in logs)


# 4. Accounting and report truth


def test_a_subset_run_accounts_for_its_rows_and_its_report_says_subset(job: Path, tmp_path: Path, prefect_server: str) -> None:
    import json

    done = cli(*run_args(job, str(tmp_path / "out"), "--rollout-id", "0-0", "--task-runner", "thread"), api_url=prefect_server)
    assert done.returncode == 0, done.stderr
    (run,) = (tmp_path / "out").glob("*/runs/*")
    rows = sum(1 for line in (run / "rollouts.jsonl").read_text().splitlines() if line.strip())
    accounting = json.loads((run / "accounting.json").read_text())
    assert (accounting["scope"], accounting["landed"], accounting["expected"], accounting["lost"]) == ("subset", rows, None, None)
    page = (run / "report.html").read_text()
    assert "subset: rollout ids 0-0" in page
    assert "A subset run owes nothing" in page
    assert "failures (found beside the rollouts)" in page  # the sidecar the run read, though no parameter named it
    assert '<time datetime="' in page
    assert " UTC</time>" in page


def test_a_run_of_no_rows_never_moves_latest(tmp_path: Path, prefect_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Were the rows gone between the check and the scan (or a deployment bypassing the CLI), LATEST still stays."""
    from flows.execution import resolve
    from tests.flows.support import run_stage

    (tmp_path / "job" / "model-calls").mkdir(parents=True)
    (tmp_path / "job" / "rollouts.jsonl").write_text("not a row\n")
    monkeypatch.setattr(resolve, "check_rows", lambda shards: None)
    result = run_stage(
        rollouts=str(tmp_path / "job" / "rollouts.jsonl"), capture_dir=str(tmp_path / "job" / "model-calls"), output=str(tmp_path / "out")
    )
    assert result["counts"]["rows"] == {"main": 0}
    assert not list((tmp_path / "out").glob("*/LATEST"))


# 5. The command line


def test_every_command_and_option_says_what_it_does_and_its_default() -> None:
    import argparse

    from flows.cli.main import build_parser

    def walk(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
        found = [parser]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    found += walk(sub)
        return found

    top = build_parser()
    assert "``" not in top.description
    assert "->" not in top.description
    assert "NeMo Gym" in top.description
    for parser in walk(top):
        assert parser.description, parser.prog
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
                continue
            assert (action.help or "").strip(), (parser.prog, action.option_strings or action.dest)
            if action.default not in (None, [], False):
                assert "default" in action.help, (parser.prog, action.option_strings, action.default)


def test_usage_errors_name_what_usage_shows(tmp_path: Path) -> None:
    assert refusal(cli("export")) == "the following arguments are required: {mlflow,otel}"
    assert refusal(cli("run", "--rollouts", "r", "--capture-dir", "c", "--output", "o", "--gate", "max_lost_share=abc")) == (
        "argument --gate: gate limit max_lost_share needs a number, got 'abc'"
    )
    (tmp_path / "model-calls").mkdir()
    assert refusal(cli("run", "--rollouts", str(tmp_path), "--capture-dir", str(tmp_path / "model-calls"), "--output", "o")) == (
        f"{tmp_path}: a folder, not a file (rollouts file expected)"
    )


def test_serve_finds_its_config_from_any_directory(tmp_path: Path) -> None:
    from flows.cli.serve import default_config

    assert default_config() == REPO / "configs" / "stage.yaml"
    assert default_config().is_file()
    assert refusal(cli("serve", "--config", str(tmp_path / "none.yaml"), cwd=tmp_path)) == (
        f"no serve config at {tmp_path}/none.yaml: give --config PATH (configs/stage.yaml of the repository is the example)"
    )


def test_output_to_a_pipe_is_neither_wrapped_nor_cut(tmp_path: Path, prefect_server: str) -> None:
    output = tmp_path / ("a-long-output-folder-name-" * 4)
    done = cli(*run_args(EXAMPLE_JOB, str(output), "--run-id", "r" * 60, "--task-runner", "thread"), api_url=prefect_server)
    assert done.returncode == 0, done.stderr
    assert f"evidence-stage run {'r' * 60}" in done.stdout
    assert "\u2026" not in done.stdout
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("outputs: ")]
    assert line.endswith(f"/runs/{'r' * 60}")
    assert str(output) in line
