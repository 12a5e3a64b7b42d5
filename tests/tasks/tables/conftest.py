"""Stage runs shared by the table tests (each built once per session), their tables built."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.storage import Location
from tasks.tables.build import build_tables
from tests.tables_runs import example_run, sample_run, sharded_run


def with_tables(run: Path) -> Path:
    head = json.loads((run / "manifest.json").read_text())["run"]
    build_tables(Location(str(run)), head["job_id"], head["run_id"])
    return run


@pytest.fixture(scope="session")
def example_tables(tmp_path_factory: pytest.TempPathFactory, prefect_server: str) -> Path:
    """The example job (job id ``example_job``, run ``r1``) with its tables."""
    return with_tables(example_run(tmp_path_factory.mktemp("example") / "out"))


@pytest.fixture(scope="session")
def runs_with_tables(tmp_path_factory: pytest.TempPathFactory, prefect_server: str, example_tables: Path) -> dict[str, Path]:
    """The example job, both samples, a sharded job and an all-or-nothing ATIF run, with their tables."""
    root = tmp_path_factory.mktemp("runs")
    return {
        "example": example_tables,
        "realistic": with_tables(sample_run(root / "realistic", "realistic_job")),
        "hostile": with_tables(sample_run(root / "hostile", "hostile_job")),
        "sharded": with_tables(sharded_run(root / "sharded")),
        "all_or_nothing": with_tables(example_run(root / "aon", atif_all_or_nothing=True)),
    }
