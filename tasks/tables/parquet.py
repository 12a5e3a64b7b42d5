"""One table's Parquet file, written in row groups to a local temporary file, then published atomically.

``TableWriter`` buffers ``row_group_rows`` rows (tuples in ``evidence.tables`` column order),
turns them into Arrow columns of the schema's fixed types and writes them as one row group, so
memory holds one row group per table whatever the run's size. The finished file is copied to
its ``Location`` through ``write_chunks`` (temp file and rename locally, one upload on object
stores; a retried write reads the local file again).

pyarrow is imported where a table is first written, not with this module: the flow imports the
reduce while it starts, and pyarrow's import (about 0.2 s) would sit on every run's start-up
path; ``tasks.reduce.task.preload_libraries`` loads it while the attempt pool works.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from evidence.tables import SCHEMA_VERSION, Table
from tasks.storage import Location

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

ROW_GROUP_ROWS = 16_384
"""Rows per row group: big enough for column statistics to skip whole groups, small enough that six buffered tables stay a few MB."""
CONVERT_ROWS = 1024
"""Buffered rows are turned into Arrow columns this many at a time (the Parquet writer's own batch of values)."""
COMPRESSION = "zstd"
COPY_BLOCK = 8 * 2**20
VERSION_KEY = b"evidence_stage.tables.schema_version"
TABLE_KEY = b"evidence_stage.tables.table"


@functools.cache
def _arrow_types() -> dict[str, pa.DataType]:
    """The Arrow type of each column type a table schema may name (``evidence.tables``)."""
    import pyarrow as pa

    return {
        "bool": pa.bool_(),
        "double": pa.float64(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "list<string>": pa.list_(pa.string()),
        "map<string,double>": pa.map_(pa.string(), pa.float64()),
        "string": pa.string(),
    }


def arrow_schema(table: Table) -> pa.Schema:
    """The table's Arrow schema: fixed types, nullability, each column's doc, the schema version."""
    import pyarrow as pa

    fields = [pa.field(c.name, _arrow_types()[c.type], nullable=c.nullable, metadata={b"doc": c.doc.encode()}) for c in table.columns]
    return pa.schema(fields, metadata={VERSION_KEY: str(SCHEMA_VERSION).encode(), TABLE_KEY: table.name.encode()})


class TableWriter:
    """Rows of one table into a local Parquet file, ``row_group_rows`` at a time."""

    def __init__(self, table: Table, row_group_rows: int = ROW_GROUP_ROWS) -> None:
        if row_group_rows < 1:
            raise ValueError("row_group_rows must be positive")
        self.table = table
        self.schema = arrow_schema(table)
        self.rows = 0
        self._group = row_group_rows
        self._buffer: list[Sequence[Any]] = []
        self._batches: list[pa.RecordBatch] = []  # the row group's first rows, as Arrow columns
        self._converted = 0  # rows in ``_batches``
        fd, self.path = tempfile.mkstemp(prefix=f"evidence-stage-table-{table.name}-", suffix=".parquet")
        os.close(fd)
        import pyarrow.parquet as pq

        try:
            self._writer: pq.ParquetWriter | None = pq.ParquetWriter(self.path, self.schema, compression=COMPRESSION)
        except BaseException:
            os.unlink(self.path)
            raise

    def add(self, row: Sequence[Any]) -> None:
        self.extend((row,))

    def extend(self, rows: Sequence[Sequence[Any]]) -> None:
        """The rows in order, in the same row groups as adding them one at a time."""
        self._buffer.extend(rows)
        while self._converted + len(self._buffer) >= self._group:
            rest = self._buffer[self._group - self._converted :]
            del self._buffer[self._group - self._converted :]
            self._flush()
            self._buffer = rest
        if len(self._buffer) >= CONVERT_ROWS:
            self._convert(len(self._buffer) // CONVERT_ROWS * CONVERT_ROWS)

    def _convert(self, count: int) -> None:
        """The first ``count`` buffered rows into Arrow columns, as the rows come, so a row group's
        last rows are all that is left to convert when it is written (the run's end, for most tables)."""
        if not count:
            return
        import pyarrow as pa

        columns = zip(*self._buffer[:count], strict=True)
        arrays = [pa.array(values, type=field.type) for values, field in zip(columns, self.schema, strict=True)]
        self._batches.append(pa.RecordBatch.from_arrays(arrays, schema=self.schema))
        self._converted += count
        del self._buffer[:count]

    def _flush(self) -> None:
        if self._writer is None:
            return
        self._convert(len(self._buffer))
        if not self._converted:
            return
        import pyarrow as pa

        self._writer.write_table(pa.Table.from_batches(self._batches, schema=self.schema), row_group_size=self._converted)
        self.rows += self._converted
        self._batches, self._converted = [], 0

    def finish(self) -> int:
        """Write the last row group and close the file; the table's row count."""
        self._flush()
        self._close()
        return self.rows

    def publish(self, target: Location) -> int:
        """Copy the finished file to ``target`` atomically; its size in bytes."""
        target.write_chunks(lambda: _blocks(self.path))
        return os.path.getsize(self.path)

    def discard(self) -> None:
        """Close and delete the local file (published or not); a close that fails (a full disk) does not stop it."""
        with contextlib.suppress(OSError):
            self._close()
        self._buffer, self._batches, self._converted = [], [], 0
        if os.path.exists(self.path):
            os.unlink(self.path)

    def _close(self) -> None:
        """Close the writer once, even when closing fails: pyarrow's finalizer would try again and
        print its failure (a full disk) as "Exception ignored" with a traceback."""
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                writer.close()
            finally:
                writer.is_open = False


def _blocks(path: str) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while block := f.read(COPY_BLOCK):
            yield block
