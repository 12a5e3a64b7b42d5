"""Writing a run's rollout viewer (``<run>/viewer/``) from its outputs: ``write_viewer``.

Reads, each once: ``health/rollout_verdicts.jsonl`` (held by identity: a line is a few hundred
bytes), then the manifest's attempt entries in step with ``rollouts.jsonl`` and, for the main
rows, ``atif/rejections.jsonl`` and ``atif/manifest.jsonl``, as ``tasks/tables/build.py`` pairs
them. Each main row goes through ``evidence.viewer.rollout_view``; the detail files are written
as they fill (a few in flight), ``index.html`` last, so a reader who finds the page finds every
file it loads. The pages hold no run id, time or input URL: a rerun writes the same bytes.

The verdict file is sorted by identity, not in row order: the n-th row of an identity owns the
n-th line of it (``evidence.tables.verdict_order``), and a row whose health digest failed has
no line.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from evidence import Streamed
from evidence.tables import AttemptIdentity, atif_columns, verdict_line_order, verdict_order
from evidence.viewer import Chunk, ViewerIndex, decode_row, render_viewer, rollout_view
from tasks.rundir import ATIF_FOLDER, REPORT_FILE, ROLLOUTS_FILE, VIEWER_FOLDER, VIEWER_PAGE, RunPaths
from tasks.storage import InputNotFound, Location
from tasks.storage.concurrent import WriteBehind
from tasks.tables.manifest import ManifestStream

MAIN = "main"
HEALTH_FAILED = "(in health checks)"
"""How an attempt's reason says its health digest failed (as ``tasks/tables/build.py`` reads it): no verdict line."""
WRITES_IN_FLIGHT = 4
WRITE_BUDGET_BYTES = 8 * 1024 * 1024
LINKS = {"report": f"../{REPORT_FILE}", "rollouts": f"../{ROLLOUTS_FILE}", "atif": f"../{ATIF_FOLDER}/"}
"""The run's files as the page links them, relative to ``viewer/``."""


def write_viewer(run_dir: Location, manifest: Mapping[str, Any] | None = None) -> list[str]:
    """Write ``<run_dir>/viewer/``: ``index.html`` and its detail files; their names, relative to the run directory.

    Args:
        run_dir: a run directory whose reduce has written its outputs.
        manifest: the run's manifest document (``RunManifest.document()``) when the caller
            holds it, before ``manifest.json`` is written; else ``manifest.json`` is read.

    Raises:
        StorageError: reading or writing failed.

    Example:
        >>> write_viewer(Location("out/example_job/runs/r1"))[-1]  # doctest: +SKIP
        'viewer/index.html'
    """
    paths = RunPaths(run_dir)
    verdicts = _verdicts(paths)
    attempts, shard_files = _attempts(paths, manifest)
    folder = paths.viewer
    folder.remove_tree()  # no detail file of an earlier writing stays beside the new page
    index, names = ViewerIndex(), []
    atif = _AtifOutcomes(paths)
    with WriteBehind(window=WRITES_IN_FLIGHT, budget=WRITE_BUDGET_BYTES) as writes:

        def write(chunk: Chunk | None) -> None:
            if chunk is not None:
                names.append(chunk.name)
                writes.submit(lambda: folder.child(chunk.name).write_bytes(chunk.data), len(chunk.data))

        lines = ((number, line) for number, _, line in paths.rollouts.iter_lines())
        for entry in attempts:
            if entry.get("source") != MAIN:
                continue
            output_line, line = next(lines, (0, b""))
            judged, shown = decode_row(line)
            identity = _identity(entry, output_line, shard_files, len(line))
            verdict = None if HEALTH_FAILED in (identity.reason or "") else verdicts.pop(verdict_order(judged, output_line))
            write(index.add(rollout_view(line, shown, identity, verdict, atif.columns(output_line))))
        write(index.finish())
    page = render_viewer(index.document(), names, LINKS)
    paths.run_dir.child(VIEWER_PAGE).write_bytes(page.encode("utf-8"))
    return [f"{VIEWER_FOLDER}/{name}" for name in names] + [VIEWER_PAGE]


def _attempts(paths: RunPaths, manifest: Mapping[str, Any] | None) -> tuple[Iterable[Mapping[str, Any]], list[Any]]:
    """The attempt entries in manifest order and each shard's file name, from the caller's manifest or ``manifest.json``."""
    if manifest is not None:
        attempts = manifest["attempts"]
        shards = manifest.get("shards") or []
        entries = attempts.items() if isinstance(attempts, Streamed) else attempts
    else:
        stream = ManifestStream(paths.manifest)
        shards = stream.head()["shards"]
        entries = stream.attempts()
    return entries, [shard.get("file") if isinstance(shard, Mapping) else None for shard in shards]


def _identity(entry: Mapping[str, Any], output_line: int, shard_files: list[Any], size: int) -> AttemptIdentity:
    key = str(entry.get("key"))
    parts = key.split(":")
    shard = int(parts[0]) if len(parts) == 3 and parts[0].isdigit() else 0
    line = entry.get("line")
    return AttemptIdentity(
        job_id="",
        run_id="",  # the viewer shows no run id: a rerun writes the same bytes (README, guarantee 3)
        key=key,
        shard=shard,
        shard_file=shard_files[shard] if shard < len(shard_files) else None,
        source=MAIN,
        line=line if isinstance(line, int) else 0,
        output_line=output_line,
        rollout_id=entry.get("rollout_id") if isinstance(entry.get("rollout_id"), str) else None,
        status=str(entry.get("status")),
        reason=entry.get("reason") if isinstance(entry.get("reason"), str) else None,
        notes=tuple(str(note) for note in entry.get("notes") or ()),
        repaired=bool(entry.get("repaired")),
        size=size,
    )


class _Verdicts:
    """The verdict lines by identity, each identity's lines in file order."""

    def __init__(self) -> None:
        self.lines: dict[tuple[tuple[int, Any], ...], deque[dict[str, Any]]] = {}

    def pop(self, identity: tuple[tuple[int, Any], ...]) -> dict[str, Any] | None:
        waiting = self.lines.get(identity)
        return waiting.popleft() if waiting else None


def _verdicts(paths: RunPaths) -> _Verdicts:
    found = _Verdicts()
    for verdict in _json_lines(paths.verdicts):
        found.lines.setdefault(verdict_line_order(verdict), deque()).append(verdict)
    return found


class _AtifOutcomes:
    """Each main row's ATIF columns in input order: its rejection (by line) or the next exported file."""

    def __init__(self, paths: RunPaths) -> None:
        self._rejections = _json_lines(paths.atif_rejections)
        self._rejection = next(self._rejections, None)
        self._exported = _json_lines(paths.atif_manifest) if paths.atif_manifest.is_file() else None  # None: error.txt, no files

    def columns(self, output_line: int) -> tuple[str, str | None, str | None]:
        rejection = self._rejection
        if rejection is not None and rejection.get("line") == output_line:
            self._rejection = next(self._rejections, None)
            error = rejection.get("error")
            return atif_columns(None, error if isinstance(error, str) else str(error))
        entry = next(self._exported, None) if self._exported is not None else None
        path = entry.get("trajectory_path") if entry is not None else None
        return atif_columns(path if isinstance(path, str) else None, None)


def _json_lines(location: Location) -> Iterator[dict[str, Any]]:
    try:
        for _, _, line in location.iter_lines():
            if line.strip():
                value = orjson.loads(line)
                if isinstance(value, dict):
                    yield value
    except InputNotFound:
        return
