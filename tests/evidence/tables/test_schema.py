"""The table schema is data with a version: a change to its shape without a new version fails here."""

from __future__ import annotations

import pytest

from evidence.tables import SCHEMA_VERSION, TABLES, TYPES, schema_document, schema_fingerprint, schema_markdown

FINGERPRINTS = {
    1: "9ab05c73eda1076e3e32347cf1be46809dda87109b93076b24725b0794137be8",
}
"""schema version -> ``schema_fingerprint()``: add a line (and bump SCHEMA_VERSION) whenever a table,
a column, a type or a nullability changes."""


def test_the_schema_version_names_this_shape() -> None:
    assert FINGERPRINTS.get(SCHEMA_VERSION) == schema_fingerprint(), "the schema changed: bump SCHEMA_VERSION and pin its fingerprint"
    assert max(FINGERPRINTS) == SCHEMA_VERSION


def test_every_table_starts_with_the_keys_that_join_it_to_rollouts() -> None:
    for table in TABLES.values():
        assert table.names[:4] == ("job_id", "run_id", "attempt_key", "source"), table.name
        assert not any(c.nullable for c in table.columns[:4]), table.name


@pytest.mark.parametrize("table", list(TABLES))
def test_columns_are_typed_and_documented_on_one_line(table: str) -> None:
    for column in TABLES[table].columns:
        assert column.type in TYPES
        assert column.doc, column.name
        assert "\n" not in column.doc, column.name
        assert "|" not in column.doc, column.name


def test_the_document_and_the_markdown_list_every_column() -> None:
    document = schema_document()
    assert document["schema_version"] == SCHEMA_VERSION
    markdown = schema_markdown()
    for name, table in TABLES.items():
        assert [c["name"] for c in document["tables"][name]["columns"]] == list(table.names)
        for column in table.columns:
            assert f"| `{column.name}` | {TYPES[column.type]} |" in markdown


def test_unknown_types_are_refused() -> None:
    from evidence.tables import Column

    with pytest.raises(ValueError, match="unknown type"):
        Column("x", "decimal", "doc")
