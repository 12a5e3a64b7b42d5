"""Folders named like the packages in the working directory do not hide them.

``python -m`` and ``python -c`` (the forkserver of the attempt pool, served flow-run processes)
put the working directory first on ``sys.path``; an output root ``./evidence`` or any
``tasks/`` folder there must not be imported instead of the installed package.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import example_run_argv

BIN = Path(sys.executable).parent
PACKAGE_NAMES = ("evidence", "tasks", "flows")


def crowded_directory(root: Path) -> Path:
    """A working directory holding empty folders named like each package."""
    for name in PACKAGE_NAMES:
        (root / name).mkdir(parents=True)
    return root


def test_run_from_a_directory_holding_folders_named_like_the_packages(prefect_server: str, tmp_path: Path) -> None:
    cwd = crowded_directory(tmp_path / "cwd")
    env = {**os.environ, "PREFECT_API_URL": prefect_server}
    done = subprocess.run(
        [
            str(BIN / "evidence-stage"),
            *example_run_argv("evidence"),
            "--run-id",
            "r1",
            "--job-id",
            "job",
            "--max-workers",
            "2",
        ],
        check=False,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (cwd / "evidence" / "job" / "runs" / "r1" / "_SUCCESS").exists()
