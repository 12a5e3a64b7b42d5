"""The analysis tables of a run, as data and as pure extraction (``tasks/tables`` writes them as Parquet).

``schema``: the tables, their columns and types, ``SCHEMA_VERSION`` and the docs generated
from them. ``rows``: one attempt's rows, from its enriched row and its identity.
"""

from evidence.tables.rows import (
    NO_ATIF,
    NO_VERDICT,
    AttemptIdentity,
    AttemptRows,
    atif_columns,
    attempt_rows,
    finding_rows,
    verdict_columns,
    verdict_line_order,
    verdict_order,
)
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
    "SCHEMA_FILE",
    "SCHEMA_VERSION",
    "TABLES",
    "TYPES",
    "AttemptIdentity",
    "AttemptRows",
    "Column",
    "Table",
    "atif_columns",
    "attempt_rows",
    "finding_rows",
    "schema_document",
    "schema_fingerprint",
    "schema_markdown",
    "verdict_columns",
    "verdict_line_order",
    "verdict_order",
]
