"""A finished run's tables and viewer rebuilt from its outputs alone: ``build_from_outputs``.

For a run made before the stage wrote them (``evidence-stage tables``); the stage itself writes
both in its reduce, from the facts each attempt's part carries (``tasks/reduce/analysis.py``),
and a rebuild of its run gives the same bytes. Every input is streamed once:
``manifest.json`` (its attempt entries, one at a time), ``rollouts.jsonl`` and
``rollouts_failures.jsonl`` in step with them, ``atif/rejections.jsonl`` and
``atif/manifest.jsonl`` in step with the main rows, then ``health/rollout_verdicts.jsonl``.
Three passes keep memory flat in the number of rollouts:

1. each attempt's row is decoded once (``evidence.tables.row_facts``; a main row's
   ``evidence.viewer.view_facts`` too): its child rows go straight to their tables, the rest
   with its ATIF columns to a local spill, and its health identity to an external sort;
2. the verdict file, sorted by identity as health writes it, pairs line for line with the
   sorted identities (equal identities keep row order on both sides); each line goes to a
   second external sort, by attempt;
3. the spilled attempts, in manifest order, get their verdicts and go to the tables and the viewer.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from evidence import RUN_OUTPUTS, AttemptEntry, StageError
from evidence.tables import NO_ATIF, AttemptIdentity, RowFacts, atif_columns, row_facts, verdict_line_order, verdict_order
from evidence.viewer import ViewFacts, decode_row, view_facts
from tasks.discover.refs import FAILURES, MAIN
from tasks.rundir import RunPaths
from tasks.storage import InputNotFound, Location
from tasks.storage.spill import SortedSpill, Spill
from tasks.tables.judged import JudgedAttempt, identity_of
from tasks.tables.manifest import ManifestError, ManifestStream
from tasks.tables.parquet import ROW_GROUP_ROWS
from tasks.tables.sink import TableSink, TablesSummary
from tasks.tables.viewer import ViewerSink

HEALTH_FAILED = "(in health checks)"
"""How an attempt's reason says its health digest failed (``evidence.errors.failure_reason``, step "health checks"):
such a main row has no verdict line."""


class TablesError(StageError):
    """A run directory whose tables cannot be built: it is not a finished run of this stage, or its outputs disagree."""


def tables_folder(run_dir: Location) -> Location:
    return RunPaths(run_dir).tables


def build_from_outputs(run_dir: Location, job_id: str, run_id: str, *, row_group_rows: int = ROW_GROUP_ROWS) -> TablesSummary:
    """Write ``<run_dir>/tables/`` (the six tables of ``evidence.tables.TABLES`` and
    ``_schema.json``) and ``<run_dir>/viewer/`` from the run's outputs; what the tables hold.

    Reads the run's outputs only (``manifest.json`` included; ``_SUCCESS`` is not needed).
    Tables and a viewer already there are replaced.

    Args:
        run_dir: the run directory.
        job_id: the run's job id; must be the manifest's.
        run_id: the run's id; must be the manifest's.
        row_group_rows: rows per Parquet row group.

    Raises:
        TablesError: an output is missing, or the outputs disagree with one another.
        StorageError: reading or writing failed.

    Example:
        >>> build_from_outputs(Location("out/example_job/runs/r1"), "example_job", "r1").rows  # doctest: +SKIP
        {'rollouts': 26, 'turns': 81, 'model_calls': 100, 'tool_calls': 61, 'findings': 11, 'gaps': 14}
    """
    paths = RunPaths(run_dir)
    require_outputs(run_dir)
    with TableSink(row_group_rows) as tables:
        with Spill[_Read]() as attempts, SortedSpill[int]() as identities, SortedSpill[dict[str, Any]]() as verdicts:
            _attempt_pass(paths, job_id, run_id, tables, attempts, identities)
            _verdict_pass(paths, identities, verdicts)
            with ViewerSink(run_dir) as viewer:  # opened once the outputs agree: it replaces the run's viewer
                for judged in _judged(attempts, verdicts):
                    tables.add_judged(judged)
                    if judged.view is not None:
                        viewer.add(judged)
                viewer.finish()
        return tables.publish(tables_folder(run_dir))


def require_outputs(run_dir: Location) -> None:
    """Refuse a folder that lacks an output the tables are built from (not a run, or one of an older version)."""
    paths = RunPaths(run_dir)
    if not paths.manifest.is_file():
        raise TablesError(f"not a run directory of evidence-stage (no manifest.json): {run_dir.display}")
    needed = [run_dir.child(output.name) for output in RUN_OUTPUTS if output.tables]  # evidence/outputs.py says which
    missing = [location for location in needed if not location.is_file()]
    # ATIF's manifest too, unless an all-or-nothing export failed and wrote error.txt instead
    if not paths.atif_manifest.is_file() and not paths.atif_error.is_file():
        missing.append(paths.atif_manifest)
    if missing:
        names = ", ".join(location.url[len(run_dir.url.rstrip("/")) + 1 :] for location in missing)
        raise TablesError(f"{run_dir.display} lacks {names}: not a finished run, or one made by an older evidence-stage")


@dataclass(frozen=True, slots=True)
class _Read:
    """Pass 1's spilled attempt: all of a ``JudgedAttempt`` but its verdict, and whether health judged it."""

    identity: AttemptIdentity
    facts: RowFacts
    view: ViewFacts | None
    atif: tuple[str | None, str | None, str | None]
    judged: bool


def _attempt_pass(
    paths: RunPaths,
    job_id: str,
    run_id: str,
    tables: TableSink,
    attempts: Spill[_Read],
    identities: SortedSpill[int],
) -> None:
    """Pass 1: every attempt's row read once, in manifest order; main rows' health identities to ``identities``."""
    manifest = ManifestStream(paths.manifest)
    try:
        head = manifest.head()
    except (ManifestError, orjson.JSONDecodeError) as exc:
        raise TablesError(f"unreadable manifest.json: {exc}") from exc
    ran = head.run
    if (ran.job_id, ran.run_id) != (job_id, run_id):
        raise TablesError(f"manifest.json is run {ran.run_id!r} of job {ran.job_id!r}, not run {run_id!r} of job {job_id!r}")
    shard_files = [shard.file for shard in head.shards]
    lines = {MAIN: _Lines(paths.rollouts), FAILURES: _Lines(paths.failures)}
    atif = _AtifJoin(paths)
    for seq, entry in _entries(manifest):
        source = entry.source
        if source not in lines:
            raise TablesError(f"manifest.json: an attempt entry of no enriched output: {entry!r:.200}")
        enriched = lines[source].next()
        identity = identity_of(entry, job_id, run_id, shard_files, lines[source].count, len(enriched))
        judged, shown = decode_row(enriched)
        facts = row_facts(judged)
        tables.add_children(identity.keys, facts)
        values = RowFacts(facts.values, [], [], [], [])
        if source == MAIN:
            view = view_facts(enriched, shown, facts if shown is judged else row_facts(shown))
            has_verdict = HEALTH_FAILED not in (identity.reason or "")
            attempts.add(_Read(identity, values, view, atif.columns(identity.output_line), has_verdict))
            if has_verdict:
                identities.add(verdict_order(judged, identity.output_line), seq)
        else:
            attempts.add(_Read(identity, values, None, NO_ATIF, False))
    for source, read in lines.items():
        read.finish(source)
    atif.finish()


def _entries(manifest: ManifestStream) -> Iterator[tuple[int, AttemptEntry]]:
    """The manifest's attempt entries numbered in order; one this stage did not write is the table commands' error."""
    try:
        yield from enumerate(manifest.attempts())
    except ManifestError as exc:
        raise TablesError(str(exc)) from exc


class _Lines:
    """One enriched output's lines, read as the manifest's entries ask for them (opened on first use)."""

    def __init__(self, location: Location) -> None:
        self.location = location
        self.count = 0
        self._lines: Iterator[tuple[int, int, bytes]] | None = None

    def next(self) -> bytes:
        if self._lines is None:
            self._lines = self.location.iter_lines()
        try:
            _, _, line = next(self._lines)
        except StopIteration:
            raise TablesError(f"{self.location.display} has fewer rows than manifest.json has attempts for it") from None
        except InputNotFound:
            raise TablesError(f"manifest.json lists attempts of {self.location.name}, which the run lacks") from None
        self.count += 1
        return line

    def finish(self, source: str) -> None:
        if self._lines is None:
            return
        extra = next(self._lines, None)
        if extra is not None:
            raise TablesError(f"{self.location.display} has more rows than manifest.json has {source} attempts")


class _AtifJoin:
    """The ATIF columns of each main row, in input order: its rejection (by line) or the next exported file."""

    def __init__(self, paths: RunPaths) -> None:
        self._rejections = _json_lines(paths.atif_rejections)
        self._rejection = next(self._rejections, None)
        withheld = not paths.atif_manifest.is_file()  # an all-or-nothing export failed: atif/error.txt, no files
        self._exported = None if withheld else _json_lines(paths.atif_manifest)

    def columns(self, output_line: int) -> tuple[str, str | None, str | None]:
        rejection = self._rejection
        if rejection is not None and rejection.get("line") == output_line:
            self._rejection = next(self._rejections, None)
            error = rejection.get("error")
            return atif_columns(None, error if isinstance(error, str) else str(error))
        if self._exported is None:
            return atif_columns(None, None)
        entry = next(self._exported, None)
        if entry is None:
            raise TablesError("atif/manifest.jsonl lists fewer files than rollouts.jsonl has rows not in atif/rejections.jsonl")
        path = entry.get("trajectory_path")
        return atif_columns(path if isinstance(path, str) else "", None)

    def finish(self) -> None:
        if self._rejection is not None:
            raise TablesError(f"atif/rejections.jsonl names line {self._rejection.get('line')}, which is no main row in order")
        if self._exported is not None and next(self._exported, None) is not None:
            raise TablesError("atif/manifest.jsonl lists more files than rollouts.jsonl has rows not in atif/rejections.jsonl")


def _json_lines(location: Location) -> Iterator[dict[str, Any]]:
    for _, _, line in location.iter_lines():
        if line.strip():
            value = orjson.loads(line)
            if isinstance(value, dict):
                yield value


def _verdict_pass(paths: RunPaths, identities: SortedSpill[int], verdicts: SortedSpill[dict[str, Any]]) -> None:
    """Pass 2: the n-th verdict line belongs to the n-th main row in identity order; each line to ``verdicts`` by attempt."""
    rows = identities.items()
    for number, verdict in enumerate(_json_lines(paths.verdicts), start=1):
        key = verdict_line_order(verdict)
        found = next(rows, None)
        if found is None or found[0] != key:
            owner = "no main row" if found is None else f"the main row with identity {found[0]}"
            raise TablesError(f"health/rollout_verdicts.jsonl line {number} (identity {key}) does not pair with {owner}")
        verdicts.add(found[1], verdict)
    left = next(rows, None)
    if left is not None:
        raise TablesError(f"health/rollout_verdicts.jsonl has no line for the main row with identity {left[0]}")


def _judged(attempts: Spill[_Read], verdicts: SortedSpill[dict[str, Any]]) -> Iterator[JudgedAttempt]:
    """Pass 3: the spilled attempts in manifest order, each with its verdict line (None when it has none)."""
    judged = verdicts.items()
    pending = next(judged, None)
    for seq, read in enumerate(attempts):
        verdict = None
        if pending is not None and pending[0] == seq:
            verdict = pending[1]
            pending = next(judged, None)
        yield JudgedAttempt(read.identity, read.facts, read.view, verdict, read.atif)
