"""Selecting a finished run's main rollouts by verdict, agent and reward: their enriched rows, as JSONL, in input order.

The choice is made on ``tables/rollouts.parquet`` (a few columns, one row group at a time);
the rows are then copied from ``rollouts.jsonl`` in one pass, since the chosen output lines
come in increasing order. Memory holds one row group's columns and one line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow.compute as pc
import pyarrow.parquet as pq

from evidence.tables import SCHEMA_VERSION, TABLES
from tasks.rundir import RunPaths
from tasks.storage import Location
from tasks.storage.retry import call_with_retries
from tasks.tables.build import TablesError, tables_folder
from tasks.tables.finished import finished_run, tables_version

_COLUMNS = ["source", "output_line", "verdict", "agent", "reward"]


@dataclass(frozen=True, slots=True)
class Selection:
    """Which main rollouts to keep: all the given conditions hold (None: any)."""

    verdict: str | None = None
    agent: str | None = None
    min_reward: float | None = None


def select_rollouts(run_dir: Location, selection: Selection, output: Location) -> int:
    """Write the enriched rows of the main rollouts matching ``selection`` to ``output`` (atomically); how many.

    Raises:
        TablesError: ``run_dir`` is not a finished run with tables of this schema version, or
            ``output`` lies inside it. Nothing is written then.
    """
    finished_run(run_dir)
    version = tables_version(run_dir)
    if version is None:
        raise TablesError(f"the run has no tables/: build them first with `evidence-stage tables {run_dir.url}`")
    if version != SCHEMA_VERSION:
        raise TablesError(
            f"the run's tables are schema version {version}, this evidence-stage reads {SCHEMA_VERSION}: "
            f"rebuild them with `evidence-stage tables --replace {run_dir.url}`"
        )
    if output.within(run_dir):
        raise TablesError(f"output {output.display} is inside the run directory, whose outputs are never changed")
    table = tables_folder(run_dir).child(TABLES["rollouts"].file)
    count = 0

    def chunks() -> Iterator[bytes]:
        nonlocal count
        count = 0
        wanted = _chosen_lines(table, selection)
        target = next(wanted, None)
        for number, _, line in RunPaths(run_dir).rollouts.iter_lines():
            if target is None:
                break
            if number == target:
                count += 1
                yield line
                yield b"\n"
                target = next(wanted, None)

    output.write_chunks(chunks)
    return count


def no_match_hint(run_dir: Location, selection: Selection) -> str:
    """What to say when ``selection`` matched no rollout of the run: the agents it has, when the
    one asked for is not among them (a mistyped ``--agent`` gave 0 rows and no word), else the
    conditions that no main rollout meets at once."""
    table = tables_folder(run_dir).child(TABLES["rollouts"].file)
    with call_with_retries(table.url, lambda: table.fs.open(table.path, "rb")) as f:
        columns = pq.read_table(f, columns=["source", "agent"])
    agents = sorted(a for a in pc.unique(columns.filter(pc.equal(columns.column("source"), "main")).column("agent")).to_pylist() if a)
    if selection.agent is not None and selection.agent not in agents:
        return f"no rollout selected: the run has no agent {selection.agent!r} (its agents: {', '.join(agents) or 'none'})"
    conditions = [f"verdict {selection.verdict}"] if selection.verdict is not None else []
    conditions += [f"agent {selection.agent!r}"] if selection.agent is not None else []
    conditions += [f"reward >= {selection.min_reward:g}"] if selection.min_reward is not None else []
    return f"no rollout selected: no main rollout has {' and '.join(conditions)}"


def _chosen_lines(table: Location, selection: Selection) -> Iterator[int]:
    """The ``output_line`` of each matching main row, in increasing order."""
    with call_with_retries(table.url, lambda: table.fs.open(table.path, "rb")) as f:
        for batch in pq.ParquetFile(f).iter_batches(columns=_COLUMNS):
            keep = pc.equal(batch.column("source"), "main")
            if selection.verdict is not None:
                keep = pc.and_kleene(keep, pc.equal(batch.column("verdict"), selection.verdict))
            if selection.agent is not None:
                keep = pc.and_kleene(keep, pc.equal(batch.column("agent"), selection.agent))
            if selection.min_reward is not None:
                keep = pc.and_kleene(keep, pc.greater_equal(batch.column("reward"), selection.min_reward))
            yield from batch.filter(pc.fill_null(keep, False)).column("output_line").to_pylist()
