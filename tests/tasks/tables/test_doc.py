"""TABLES.md: its schema section is schema.py's, and every DuckDB query in it prints, on the example job, the table under it.

Regenerate after a change (from the repository root, with a run of the example job made as
TABLES.md says, under ``<root>/out``): ``.venv/bin/python -m tests.tasks.tables.test_doc <root>``.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from evidence.tables import schema_markdown
from tests.conftest import REPO

DOC = REPO / "TABLES.md"
SCHEMA = re.compile(r"(<!-- schema:start -->\n).*?(<!-- schema:end -->)", re.DOTALL)
# a ```sql block, then (after one blank line) the markdown table of its result, if any
QUERY = re.compile(r"```sql\n(?P<sql>.*?)```\n(?:\n(?P<table>(?:\|[^\n]*\n)+))?", re.DOTALL)
PYTHON = re.compile(r"```python\n(?P<code>.*?)```\n", re.DOTALL)


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_cell(v) for v in value) + "]"
    return str(value).replace("|", "\\|")


def result_table(sql: str) -> str:
    """A query's result as a markdown table (run from the folder holding ``out/``)."""
    import duckdb

    relation = duckdb.connect().sql(sql)
    lines = ["| " + " | ".join(relation.columns) + " |", "|" + "---|" * len(relation.columns)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in relation.fetchall()]
    return "\n".join(lines) + "\n"


def rendered(doc: str) -> str:
    """TABLES.md as it must read: the schema section generated, each query followed by its result."""
    doc = SCHEMA.sub(lambda m: m.group(1) + schema_markdown() + m.group(2), doc)
    return QUERY.sub(lambda m: f"```sql\n{m.group('sql')}```\n\n{result_table(m.group('sql'))}", doc)


@pytest.fixture
def in_example_root(example_tables: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = example_tables.parents[3]  # <root>/out/example_job/runs/r1
    assert (root / "out" / "example_job" / "runs" / "r1") == example_tables
    monkeypatch.chdir(root)
    return root


def test_the_schema_section_is_generated_from_schema_py() -> None:
    found = SCHEMA.search(DOC.read_text())
    assert found is not None
    assert found.group(0) == f"{found.group(1)}{schema_markdown()}{found.group(2)}"


def test_every_query_prints_the_table_under_it(in_example_root: Path) -> None:
    doc = DOC.read_text()
    queries = list(QUERY.finditer(doc))
    assert len(queries) >= 7
    assert all(q.group("table") for q in queries), "every query shows its result"
    assert rendered(doc) == doc


def test_the_pandas_example_runs(in_example_root: Path) -> None:
    blocks = [m.group("code") for m in PYTHON.finditer(DOC.read_text()) if "import pandas" in m.group("code")]
    assert blocks
    for code in blocks:
        names: dict[str, Any] = {}
        exec(code, names)
        assert names["per_run"].to_dict() == {("example_job", "r1"): 81}


if __name__ == "__main__":
    os.chdir(sys.argv[1])
    DOC.write_text(rendered(DOC.read_text()))
