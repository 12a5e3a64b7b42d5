"""One worker's memory for one long attempt stays within the engine's bound and does not leak.

Each figure is a fresh process (tests/reliability/attempt_peak.py) processing a ~4.5 MB row with
its ~3.5 MB capture: once, eleven and twenty-one times in a row. The peak must stay within
4 x (row + capture) + 150 MB (README, guarantee 6), and the last ten attempts must not raise it
by more than two rows' bytes: a per-attempt leak (a cache holding rows, a global list) would grow
it by at least a row per repeat, ten rows in all. The first attempts are left out of the leak
figure: the allocator settles over them (glibc moves its mmap threshold as large blocks are
freed), which raises the peak once by a few MB.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.jobgen import generate_job
from tests.reliability.attempt_peak import measure


@pytest.fixture(scope="module")
def long_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("long-job")
    generate_job(root, rollouts=2, calls_per_rollout=20, history_bytes=12000, seed=4)
    return root


def test_a_long_attempt_stays_within_the_bound_and_does_not_leak(long_job: Path) -> None:
    once, settled, repeated = measure(long_job, 1, 1), measure(long_job, 1, 11), measure(long_job, 1, 21)
    assert once["row_bytes"] > 2**22, "the job must hold a long row"
    assert max(once["peak_mib"], repeated["peak_mib"]) <= once["bound_mib"]
    assert repeated["peak_mib"] - settled["peak_mib"] < 2 * once["row_bytes"] / 2**20
