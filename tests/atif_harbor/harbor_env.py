"""A private virtualenv with harbor 0.25.0, used only to validate our ATIF files in tests.

harbor is not a dependency of evidence-stage (it requires Python 3.12 and a large tree); its
validator only needs pydantic, so it is installed with ``--no-deps`` beside the project venv,
once, and reused by later sessions.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

__all__ = ["HARBOR_PACKAGES", "HarborUnavailable", "harbor_python"]

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv-harbor"
HARBOR_PACKAGES = (
    "harbor==0.25.0",
    "pydantic==2.14.3",
    "pydantic-core==2.50.4",
    "typing-extensions",
    "annotated-types",
    "typing-inspection",
)
_MARKER = VENV / ".evidence-stage-packages"


class HarborUnavailable(RuntimeError):
    """The harbor venv could not be created (typically: no package index reachable)."""


def harbor_python() -> Path:
    """The venv's interpreter, creating and filling the venv first when it is not ready."""
    python = VENV / "bin" / "python"
    wanted = "\n".join(HARBOR_PACKAGES)
    if python.exists() and _MARKER.exists() and _MARKER.read_text() == wanted:
        return python
    steps = (
        [sys.executable, "-m", "venv", str(VENV)],
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--ignore-requires-python", *HARBOR_PACKAGES],
    )
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise HarborUnavailable(f"{' '.join(step[:4])} failed:\n{done.stderr[-2000:]}")
    _MARKER.write_text(wanted)
    return python
