"""Stage runs shared by the table tests (each built once per session), with the tables and viewer the stage wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tables_runs import example_run, sample_run, sharded_run


@pytest.fixture(scope="session")
def example_tables(tmp_path_factory: pytest.TempPathFactory, prefect_server: str) -> Path:
    """The example job (job id ``example_job``, run ``r1``) with its tables."""
    return example_run(tmp_path_factory.mktemp("example") / "out")


@pytest.fixture(scope="session")
def runs_with_tables(tmp_path_factory: pytest.TempPathFactory, prefect_server: str, example_tables: Path) -> dict[str, Path]:
    """The example job, both samples, a sharded job and an all-or-nothing ATIF run, with their tables."""
    root = tmp_path_factory.mktemp("runs")
    return {
        "example": example_tables,
        "realistic": sample_run(root / "realistic", "realistic_job"),
        "hostile": sample_run(root / "hostile", "hostile_job"),
        "sharded": sharded_run(root / "sharded"),
        "all_or_nothing": example_run(root / "aon", atif_all_or_nothing=True),
    }
