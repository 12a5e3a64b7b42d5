"""Memory is bounded by the largest attempt, not by the job (DESIGN.md invariant 6).

Two jobs with the same attempt sizes, 10x apart in attempts, each run in a fresh process:
the larger one's peak RSS must stay within 20% of the smaller one's. A run that holds rows,
parts or captures for the whole job grows by tens of MiB here and fails. The 2,000 vs 20,000
comparison is tests/bench/memory_scale.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.jobgen import generate_job
from tests.reliability.memory import measure_run

SMALL, LARGE = 200, 2000
TOLERANCE = 1.2


def test_peak_rss_does_not_grow_with_the_number_of_attempts(tmp_path: Path, prefect_server: str) -> None:
    figures = {}
    for size in (SMALL, LARGE):
        job = generate_job(tmp_path / f"job{size}", rollouts=size, calls_per_rollout=2, history_bytes=50)
        figures[size] = measure_run(job, tmp_path / f"out{size}", prefect_server)
    print(f"\nmemory: {SMALL} rollouts {figures[SMALL]}; {LARGE} rollouts {figures[LARGE]}")
    assert figures[LARGE]["attempts"] >= 10 * SMALL
    assert figures[LARGE]["peak_mib"] <= TOLERANCE * figures[SMALL]["peak_mib"], figures
