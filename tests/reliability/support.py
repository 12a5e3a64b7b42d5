"""Helpers for the reliability tests: the CLI in a subprocess, run-directory inspection."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO
from tests.jobgen import JobInfo

CLI_TIMEOUT_S = 180


@dataclass(frozen=True)
class CliResult:
    returncode: int
    stdout: str
    stderr: str


def job_args(job: JobInfo, output: Path) -> list[str]:
    """The CLI's input/output options for a generated job."""
    return ["--rollouts", str(job.rollouts), "--capture-dir", str(job.capture_dir), "--output", str(output)]


def cli_env(api_url: str, kill_at: str | None = None) -> dict[str, str]:
    """The environment of a CLI subprocess: the session's Prefect server, optionally a kill point."""
    env = {k: v for k, v in os.environ.items() if k != "EVIDENCE_STAGE_KILL_AT"}
    env.update(PREFECT_API_URL=api_url, PYTHONPATH=str(REPO), PREFECT_LOGGING_LEVEL="ERROR")
    if kill_at:
        env["EVIDENCE_STAGE_KILL_AT"] = kill_at
    return env


def cli_command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "tests.reliability.killpoint", "run", *args]


def run_cli(api_url: str, args: list[str], *, kill_at: str | None = None) -> CliResult:
    """``evidence-stage run ARGS`` in a fresh process (killed at ``kill_at`` when given)."""
    done = subprocess.run(
        cli_command(args), check=False, cwd=REPO, env=cli_env(api_url, kill_at), capture_output=True, text=True, timeout=CLI_TIMEOUT_S
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


def run_dir(output: Path, run_id: str) -> Path:
    """The one run directory called ``run_id`` below ``output`` (whatever the job id is)."""
    (found,) = output.glob(f"*/runs/{run_id}")
    return found


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("evidence-stage: error:")]
