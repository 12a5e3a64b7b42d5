"""A private virtualenv with harbor 0.25.0, used only to validate our ATIF files in tests.

harbor is not a dependency of evidence-stage (it requires Python 3.12 and a large tree); its
validator only needs pydantic, so it is installed with ``--no-deps`` beside the project venv,
once, and reused by later sessions.
"""

from __future__ import annotations

from pathlib import Path

from tests.venvs import VenvUnavailable, private_venv

__all__ = ["HARBOR_PACKAGES", "HarborUnavailable", "harbor_python"]

HARBOR_PACKAGES = (
    "harbor==0.25.0",
    "pydantic==2.14.3",
    "pydantic-core==2.50.4",
    "typing-extensions",
    "annotated-types",
    "typing-inspection",
)
HarborUnavailable = VenvUnavailable


def harbor_python() -> Path:
    """The harbor venv's interpreter."""
    return private_venv(".venv-harbor", HARBOR_PACKAGES, "--no-deps", "--ignore-requires-python") / "bin" / "python"
