"""Measuring a run's memory in a fresh process (shared by the memory test and the benchmark)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import REPO
from tests.jobgen import JobInfo
from tests.reliability.support import cli_env

RUN_TIMEOUT_S = 1800


def measure_run(job: JobInfo, output: Path, api_url: str) -> dict[str, Any]:
    """Run the stage over ``job`` in a new process; its attempts, baseline, peak and growth (MiB)."""
    return measure_inputs(job.rollouts, job.capture_dir, output, api_url)


def measure_inputs(rollouts: Path, capture_dir: Path, output: Path, api_url: str) -> dict[str, Any]:
    """``measure_run`` of a job named by its ``--rollouts`` (a file or a glob of shards) and capture folder."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.reliability.peak_rss", str(rollouts), str(capture_dir), str(output)],
        cwd=REPO,
        env=cli_env(api_url),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"measured run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
