"""The analysis tables of a run, as data and as pure extraction (``tasks/tables`` writes them as Parquet).

``schema``: the tables, their columns and types, ``SCHEMA_VERSION`` and the docs generated
from them. ``rows``: one attempt's rows, from its enriched row (``row_facts``) and its identity (``rollout_row``);
``judgement``: the columns the run's judgement of it adds (verdict, findings, ATIF).
"""

from evidence.tables.judgement import (
    NO_ATIF,
    NO_VERDICT,
    atif_columns,
    finding_rows,
    verdict_columns,
    verdict_line_order,
    verdict_order,
)
from evidence.tables.rows import ROW_COLUMNS, AttemptIdentity, RowFacts, rollout_row, row_facts
from evidence.tables.schema import (
    SCHEMA_FILE,
    SCHEMA_VERSION,
    TABLES,
    TYPES,
    Column,
    Table,
    schema_document,
    schema_fingerprint,
    schema_markdown,
)

__all__ = [
    "NO_ATIF",
    "NO_VERDICT",
    "ROW_COLUMNS",
    "SCHEMA_FILE",
    "SCHEMA_VERSION",
    "TABLES",
    "TYPES",
    "AttemptIdentity",
    "Column",
    "RowFacts",
    "Table",
    "atif_columns",
    "finding_rows",
    "rollout_row",
    "row_facts",
    "schema_document",
    "schema_fingerprint",
    "schema_markdown",
    "verdict_columns",
    "verdict_line_order",
    "verdict_order",
]
