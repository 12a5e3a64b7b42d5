"""Private virtualenvs for tools the tests need but evidence-stage must not depend on.

Each lives beside the project venv (``.venv-<name>``), is created once, and is reused while
its marker file lists the same packages.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

__all__ = ["VenvUnavailable", "private_venv"]

REPO = Path(__file__).resolve().parent.parent


class VenvUnavailable(RuntimeError):
    """The venv could not be created (typically: no package index reachable)."""


def private_venv(name: str, packages: tuple[str, ...], *pip_options: str) -> Path:
    """The venv folder ``REPO/name`` holding ``packages``, created and filled first when not ready."""
    venv = REPO / name
    python = venv / "bin" / "python"
    marker = venv / ".evidence-stage-packages"
    wanted = "\n".join(packages)
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return venv
    steps = (
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *pip_options, *packages],
    )
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise VenvUnavailable(f"{' '.join(step[:4])} failed:\n{done.stderr[-2000:]}")
    marker.write_text(wanted)
    return venv
