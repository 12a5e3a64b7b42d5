"""Session fixture: the harbor venv's python (skips the module when it cannot be built)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.atif_harbor.harbor_env import HarborUnavailable, harbor_python


@pytest.fixture(scope="session")
def harbor() -> Path:
    try:
        return harbor_python()
    except HarborUnavailable as error:
        pytest.skip(f"harbor 0.25.0 venv unavailable: {error}")
