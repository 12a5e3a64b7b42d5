"""The README's example section, followed as a new user would (issue 43).

A folder stands in for the clone: the project's ``.venv`` is linked into it and the example job
runs there as ``infra/scripts/example.sh`` runs it (``--output out``, no job or run id), in a
fresh ``evidence-stage`` process; a subset rerun follows, so ``out/`` holds more than one run
and a command that read every run, not the newest complete one (``LATEST``), would count twice.
The README's DuckDB query and its ``select`` commands are then run as pasted in that folder.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.conftest import REPO, example_run_argv
from tests.flows.test_operator_edges import cli
from tests.tasks.tables.test_doc import QUERY, rendered

README = (REPO / "README.md").read_text(encoding="utf-8")
SHELL = re.compile(r"```sh\n(?P<code>.*?)```\n", re.DOTALL)


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory, prefect_server: str) -> tuple[Path, str]:
    """The stand-in clone after the example command, and what that command printed on stdout."""
    root = tmp_path_factory.mktemp("clone")
    (root / ".venv").symlink_to(Path(sys.executable).parents[1], target_is_directory=True)
    example = cli(*example_run_argv("out"), cwd=root, api_url=prefect_server, timeout=600)
    assert example.returncode == 0, example.stderr
    subset = cli(*example_run_argv("out"), "--rollout-id", "4-0", cwd=root, api_url=prefect_server, timeout=600)
    assert subset.returncode == 0, subset.stderr
    return root, example.stdout


def test_the_example_writes_the_run_directory_the_readme_names(clone: tuple[Path, str]) -> None:
    root, stdout = clone
    last = stdout.splitlines()[-1]
    found = re.fullmatch(r"outputs: file://(?P<job>.+/out/example_job-[0-9a-f]+)/runs/(?P<run>[0-9]{8}T[0-9]{6}Z-[0-9a-f]+)", last)
    assert found is not None, last
    assert Path(found["job"]).parent == root / "out"
    assert (Path(found["job"]) / "LATEST").read_text().strip() == found["run"]
    assert "out/example_job-<hash>/runs/<run-id>/" in README
    assert "`outputs: file://...`" in README


def test_the_readmes_query_prints_the_table_under_it(clone: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(clone[0])
    queries = list(QUERY.finditer(README))
    assert queries
    assert all("out/example_job-*" in q.group("sql") for q in queries), "on the run the example command makes"
    assert all(q.group("table") for q in queries)
    assert rendered(README) == README


def test_the_readmes_select_commands_write_the_healthy_rows(clone: tuple[Path, str]) -> None:
    (block,) = [m.group("code") for m in SHELL.finditer(README) if " select " in m.group("code")]
    done = subprocess.run(
        ["bash", "-euc", block], cwd=clone[0], env=dict(os.environ), capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    rows = [orjson.loads(line) for line in (clone[0] / "healthy.jsonl").read_bytes().splitlines()]
    assert len(rows) == 16
