"""Fixtures of the reliability suite: small generated jobs shared by a module."""

from __future__ import annotations

import pytest

from tests.jobgen import JobInfo, generate_job


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> JobInfo:
    """A realistic job with a failures sidecar, small enough for many runs."""
    return generate_job(
        tmp_path_factory.mktemp("job") / "job", rollouts=24, calls_per_rollout=3, history_bytes=300, seed=11, failures_fraction=0.2
    )
