"""Operator edges, round two (issue 43): what a new user still hit, tried as they would: the real CLI in a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.flows.test_operator_edges import cli, in_mount_namespace, job, refusal, run_args

__all__ = ["job"]  # the fixture, shared

RUN_ID = "r1"


@pytest.fixture(scope="module")
def finished_json(tmp_path_factory: pytest.TempPathFactory, prefect_server: str) -> tuple[list[str], Path, str]:
    """One finished run of the example job through the CLI, with ``--json``: its command line, run directory and stdout."""
    from tests.conftest import EXAMPLE_JOB

    argv = run_args(EXAMPLE_JOB, str(tmp_path_factory.mktemp("finished") / "out"), "--task-runner", "thread")
    done = cli(*argv, "--run-id", RUN_ID, "--json", api_url=prefect_server)
    assert done.returncode == 0, done.stderr
    (run,) = Path(argv[argv.index("--output") + 1]).glob(f"*/runs/{RUN_ID}")
    return argv, run, done.stdout


@pytest.fixture(scope="module")
def finished(finished_json: tuple[list[str], Path, str]) -> tuple[list[str], Path]:
    """The finished run's command line and run directory."""
    return finished_json[0], finished_json[1]


def test_run_json_prints_one_line_a_script_reads(finished_json: tuple[list[str], Path, str]) -> None:
    _, run, stdout = finished_json
    line, *rest = stdout.splitlines()
    assert rest == []
    summary = json.loads(line)
    assert (summary["run_id"], summary["run_dir"], summary["already_complete"], summary["gate"]) == (RUN_ID, f"file://{run}", False, None)
    manifest = json.loads((run / "manifest.json").read_text())
    assert (manifest["run"]["resumed"], "resumed_at" in manifest["run"]) == (False, False)  # a run never resumed has no resume time
    assert summary["counts"] == manifest["counts"]
    assert summary["counts"]["verdicts"] == {"healthy": 16, "unhealthy": 4, "unobserved": 4}
    groups = json.loads((run / "scores.json").read_text())["groups"]
    assert summary["scores"]
    for group, metrics in summary["scores"].items():
        for name, score in metrics.items():
            assert (score["raw"], score["clean"]) == (groups[group]["metrics"][name]["raw"], groups[group]["metrics"][name]["clean"])


@pytest.mark.parametrize(
    ("extra", "conflict"),
    [
        (["--gate", "max_lost_share=0.5"], "gate: run has None, asked {'max_lost_share': 0.5}"),
        (["--score-mask", "none"], "score_mask: run has 'unhealthy', asked 'none'"),
    ],
)
def test_a_resume_with_another_gate_or_score_mask_is_refused(
    extra: list[str], conflict: str, finished: tuple[list[str], Path], prefect_server: str
) -> None:
    argv, run = finished
    reason = refusal(cli(*argv, "--resume", RUN_ID, *extra, api_url=prefect_server))
    assert reason == f"--resume conflicts with the run's parameters ({conflict})"
    params = json.loads((run / "params.json").read_text())
    assert "gate" not in params
    assert "score_mask" not in params


def test_a_resume_that_repeats_the_runs_own_score_mask_goes_ahead(finished: tuple[list[str], Path], prefect_server: str) -> None:
    argv, _ = finished
    done = cli(*argv, "--resume", RUN_ID, "--score-mask", "unhealthy", api_url=prefect_server)
    assert done.returncode == 0, done.stderr
    assert "already complete" in done.stdout


def test_an_unknown_storage_option_is_refused_by_its_name(job: Path) -> None:
    """Refused before any request (the endpoint answers nothing); the options S3 takes pass, whichever layer takes them."""
    options = ["bogus_opt=1", "endpoint_url=http://127.0.0.1:9", "profile=default", "use_listings_cache=false", "anon=true"]
    argv = run_args(job, "s3://bucket/out", *(arg for option in options for arg in ("--storage-option", option)))
    assert refusal(cli(*argv)) == "unknown storage option bogus_opt (not an option of S3FileSystem)"


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (["--dask-workers", "2"], "dask_workers applies to the dask task runner only (task_runner is process): add --task-runner dask"),
        (
            ["--task-runner", "dask", "--dask-workers", "2", "--dask-address", "tcp://127.0.0.1:9"],
            "dask_workers sizes a local cluster; with dask_address the cluster is the scheduler's (size the window with max_workers)",
        ),
    ],
)
def test_dask_workers_given_at_its_default_size_is_still_refused_without_a_local_dask_cluster(
    extra: list[str], reason: str, job: Path, tmp_path: Path
) -> None:
    assert refusal(cli(*run_args(job, str(tmp_path / "out"), *extra))) == reason


def test_a_capture_dir_that_is_a_file_is_said_to_be_one(job: Path, tmp_path: Path) -> None:
    argv = run_args(job, str(tmp_path / "out"))
    argv[argv.index("--capture-dir") + 1] = str(job / "rollouts.jsonl")
    assert refusal(cli(*argv)) == f"{job}/rollouts.jsonl: a file, not a folder (capture directory expected)"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("url", "meant"),
    [("file:/data/x.jsonl", "file:///data/x.jsonl"), ("file:data/x.jsonl", "the path alone: data/x.jsonl"), ("s3:/b/x", "s3://b/x")],
)
def test_a_one_slash_url_is_refused_pointing_to_the_url_meant(url: str, meant: str, job: Path, tmp_path: Path) -> None:
    argv = run_args(job, str(tmp_path / "out"))
    argv[argv.index("--rollouts") + 1] = url
    assert (
        refusal(cli(*argv)) == f"invalid parameter rollouts: malformed URL {url!r}: scheme {url.partition(':')[0]!r} needs '://' ({meant})"
    )


def test_a_line_that_is_not_utf8_is_skipped_naming_its_first_bad_byte(job: Path, tmp_path: Path, prefect_server: str) -> None:
    rollouts = job / "rollouts.jsonl"
    lines = rollouts.read_bytes().count(b"\n")
    with rollouts.open("ab") as file:
        file.write(b'{"a": "x\xffy"}\n')
    done = cli(*run_args(job, str(tmp_path / "out"), "--task-runner", "thread"), api_url=prefect_server)
    assert done.returncode == 0, done.stderr
    (manifest,) = (tmp_path / "out").glob("*/runs/*/manifest.json")
    skipped = json.loads(manifest.read_text())["skipped_lines"]
    assert [(s["line"], s["reason"]) for s in skipped] == [(lines + 1, "invalid UTF-8 at byte 9")]  # 1-based: the 9th byte


def test_tables_of_a_run_whose_tables_are_current_says_so_and_succeeds(finished: tuple[list[str], Path]) -> None:
    from evidence.tables import SCHEMA_VERSION

    _, run = finished
    before = {p.name: p.stat().st_mtime_ns for p in (run / "tables").iterdir()}
    done = cli("tables", str(run))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"tables are current (schema version {SCHEMA_VERSION}): {run / 'tables'} (--replace builds them again)\n"
    assert {p.name: p.stat().st_mtime_ns for p in (run / "tables").iterdir()} == before


def _in_a_terminal(argv: list[str], api_url: str) -> tuple[int, str]:
    """``evidence-stage ARGV`` with a terminal for its three streams (rich draws its bar only there): exit status, all it drew."""
    import os
    import pty
    import subprocess
    import sys

    from tests.conftest import REPO

    leader, follower = pty.openpty()
    environment = os.environ | {"PYTHONPATH": str(REPO), "PREFECT_LOGGING_LEVEL": "ERROR", "PREFECT_API_URL": api_url, "COLUMNS": "120"}
    process = subprocess.Popen(
        [sys.executable, "-m", "flows.cli.main", *argv], cwd=REPO, env=environment, stdin=follower, stdout=follower, stderr=follower
    )
    os.close(follower)
    drawn = bytearray()
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: every writer is gone
            break
        if not chunk:
            break
        drawn += chunk
    os.close(leader)
    return process.wait(timeout=180), drawn.decode(errors="replace")


def test_the_progress_bar_has_its_total_from_the_start(job: Path, tmp_path: Path, prefect_server: str) -> None:
    code, drawn = _in_a_terminal(run_args(job, str(tmp_path / "out"), "--task-runner", "thread"), prefect_server)
    assert code == 0, drawn
    assert "0/26" in drawn  # 24 rows and 2 failures sidecar rows, counted before discovery
    assert "/?" not in drawn


def test_a_run_keeps_prefects_and_dasks_info_logs_off_the_terminal_unless_verbose(
    job: Path, tmp_path: Path, prefect_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At Prefect's own level (INFO): a local Dask cluster's run says its claim line alone; ``--verbose`` shows the logs."""
    from flows.cli.console import QUIET_LOGS

    for name in QUIET_LOGS:  # as a run in this process (an in-process CLI test) leaves them
        monkeypatch.delenv(name, raising=False)
    argv = run_args(job, str(tmp_path / "dask"), "--task-runner", "dask", "--dask-workers", "1")
    done = cli(*argv, api_url=prefect_server, PREFECT_LOGGING_LEVEL="INFO")
    assert done.returncode == 0, done.stderr
    shown = [line for line in done.stderr.splitlines() if " | WARNING | distributed.nanny - Worker process still alive" not in line]
    assert len(shown) == 1, done.stderr  # no distributed.* INFO line, no Prefect INFO line
    assert shown[0].startswith("evidence-stage: run ")
    verbose = cli(
        *run_args(job, str(tmp_path / "verbose"), "--task-runner", "thread", "--verbose"),
        api_url=prefect_server,
        PREFECT_LOGGING_LEVEL="INFO",
    )
    assert verbose.returncode == 0, verbose.stderr
    assert "| INFO    | Flow run " in verbose.stderr


def test_a_selection_that_matches_nothing_says_why_it_may_have(finished: tuple[list[str], Path], tmp_path: Path) -> None:
    _, run = finished
    picked = tmp_path / "picked.jsonl"
    done = cli("select", str(run), "--verdict", "healthy", "--agent", "nobody", "--output", str(picked))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "0 rollouts selected"
    assert done.stderr.startswith("evidence-stage: no rollout selected: the run has no agent 'nobody' (its agents: chat_agent, ")
    assert picked.read_bytes() == b""
    done = cli("select", str(run), "--verdict", "unhealthy", "--agent", "chat_agent", "--min-reward", "1", "--output", str(picked))
    assert (
        done.stderr == "evidence-stage: no rollout selected: no main rollout has verdict unhealthy and agent 'chat_agent' and reward >= 1\n"
    )
    done = cli("select", str(run), "--verdict", "healthy", "--output", str(picked))
    assert (done.returncode, done.stderr) == (0, "")  # rows selected: no hint


def test_version_and_a_choice_list_that_reads_as_its_choices() -> None:
    from importlib.metadata import version

    done = cli("--version")
    assert (done.returncode, done.stdout) == (0, f"evidence-stage {version('evidence-stage')}\n")
    shown = cli("run", "--help").stdout
    assert "--score-mask {unhealthy|unhealthy,unobserved|none}" in shown  # it read {unhealthy,unhealthy,unobserved,none}
    assert "--task-runner {thread|process|dask}" in shown


def test_a_resume_says_what_it_reuses_and_the_manifest_keeps_both_start_times(job: Path, tmp_path: Path, prefect_server: str) -> None:
    from datetime import UTC, datetime

    from tests.reliability.support import run_cli

    argv = run_args(job, str(tmp_path / "out"), "--task-runner", "thread", "--attempts-per-task", "2")[1:]
    killed = run_cli(prefect_server, [*argv, "--run-id", "crashed"], kill_at="after:*.seg:3")
    assert killed.returncode == -9, killed.stderr
    (run,) = (tmp_path / "out").glob("*/runs/crashed")
    reusable = sum(len(json.loads(seg.read_bytes().split(b"\n")[1])) for seg in (run / "attempts").rglob("*.seg"))
    assert 0 < reusable < 26
    claimed = datetime.fromtimestamp((run / "params.json").stat().st_mtime, UTC)
    done = cli("run", *argv, "--resume", "crashed", api_url=prefect_server)
    assert done.returncode == 0, done.stderr
    assert f"evidence-stage: resumed: {reusable} attempts reused, {26 - reusable} to go" in done.stderr.splitlines()
    times = json.loads((run / "manifest.json").read_text())["run"]
    assert times["resumed"] is True
    assert datetime.fromisoformat(times["started_at"]) == claimed
    assert claimed < datetime.fromisoformat(times["resumed_at"]) < datetime.fromisoformat(times["finished_at"])


def test_a_full_temporary_folder_is_one_line_naming_it_and_what_the_run_needs(job: Path, tmp_path: Path, prefect_server: str) -> None:
    """TMPDIR on a 1 MiB tmpfs with 16 KiB left."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    fill = f'mount -t tmpfs -o size=1m tmpfs "{temp}" && head -c {2**20 - 2**14} /dev/zero > "{temp}/filler"'
    argv = run_args(job, str(tmp_path / "out"), "--task-runner", "thread")
    done = in_mount_namespace(fill, argv, PREFECT_API_URL=prefect_server, TMPDIR=str(temp))
    assert done.returncode == 2, (done.stdout, done.stderr)
    claimed, error = done.stderr.splitlines()  # no traceback, no Prefect record of the failure
    run_id = claimed.removeprefix("evidence-stage: run ").split(":", 1)[0]
    assert error.startswith(f"evidence-stage: error: No space left on device in the temporary folder {temp}: this run needs about "), error
    assert " (a fifth of its rollouts files), " in error
    resume = f"evidence-stage {' '.join(argv)} --resume {run_id}"
    assert error.endswith(f"free some, or set TMPDIR to a folder with room; run {run_id} is kept, resume it with: {resume}")
