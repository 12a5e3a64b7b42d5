"""The six tables of a run being written: ``TableSink``, fed one attempt at a time, published at the end.

Child rows (turns, model calls, tool calls, gaps) go in as soon as an attempt's row is read;
its ``rollouts`` row and ``findings`` go in once the run has judged it (``JudgedAttempt``).
Each table is written in row groups to a local file (``TableWriter``) and published atomically
under ``tables/``; ``_schema.json`` is written last, so a reader that finds it finds every table.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

from evidence import dumps
from evidence.tables import SCHEMA_FILE, TABLES, RowFacts, finding_rows, rollout_row, schema_document, verdict_columns
from tasks.storage import Location
from tasks.storage.concurrent import at_once
from tasks.tables.judged import JudgedAttempt
from tasks.tables.parquet import ROW_GROUP_ROWS, TableWriter

JUDGED_TABLES = ("rollouts", "findings")
"""The tables ``add_judged`` writes."""


@dataclass
class TablesSummary:
    """What a ``TableSink`` published: the folder, rows and bytes per table, and how long it took."""

    folder: str
    rows: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


class TableSink:
    """The run's tables, row group by row group, in local files until ``publish``; discarded on close."""

    def __init__(self, row_group_rows: int = ROW_GROUP_ROWS) -> None:
        self._started = time.perf_counter()
        self._row_group_rows = row_group_rows
        self._writers: dict[str, TableWriter] = {}
        try:
            for name, table in TABLES.items():
                self._writers[name] = TableWriter(table, row_group_rows)
        except BaseException:  # a full temporary folder: those already made are discarded, not left to the collector
            self.__exit__(None, None, None)
            raise

    def add_children(self, keys: tuple[str, str, str, str], facts: RowFacts) -> None:
        """An attempt's turns, model calls, tool calls and gaps, under its four key columns."""
        for name, rows in (
            ("turns", facts.turns),
            ("model_calls", facts.model_calls),
            ("tool_calls", facts.tool_calls),
            ("gaps", facts.gaps),
        ):
            self._writers[name].extend([(*keys, *values) for values in rows])

    def add_judged(self, judged: JudgedAttempt) -> None:
        """An attempt's ``rollouts`` row (with its ATIF and verdict columns) and its findings."""
        rollout = rollout_row(judged.facts, judged.identity)
        self._writers["rollouts"].add((*rollout, *judged.atif, *verdict_columns(judged.verdict)))
        self._writers["findings"].extend(finding_rows(judged.verdict, judged.identity.keys))

    def restart_judged(self) -> None:
        """Drop every ``rollouts`` row and finding added so far: the attempts are judged again."""
        for name in JUDGED_TABLES:
            self._writers[name].discard()
            self._writers[name] = TableWriter(TABLES[name], self._row_group_rows)

    def publish(self, folder: Location) -> TablesSummary:
        """Finish every table and publish it into ``folder``, ``_schema.json`` last."""
        summary = TablesSummary(folder.url)
        for name, writer in self._writers.items():
            summary.rows[name] = writer.finish()
        # on an object store the uploads wait on the network, not on each other: all at once
        published = at_once(
            [functools.partial(writer.publish, folder.child(writer.table.file)) for writer in self._writers.values()],
            remote=not folder.is_local,
        )
        summary.bytes = dict(zip(self._writers, published, strict=True))
        folder.child(SCHEMA_FILE).write_bytes(dumps(schema_document(), indent=True) + b"\n")
        summary.seconds = round(time.perf_counter() - self._started, 3)
        return summary

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        for writer in self._writers.values():
            writer.discard()
