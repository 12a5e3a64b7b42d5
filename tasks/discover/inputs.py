"""A job's input files: checking they exist, listing them (one HEAD each, one LIST of the capture folder), and their fingerprint."""

from __future__ import annotations

import functools
import hashlib
import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import orjson

from evidence import CAPTURE_SUFFIX, MARKER_SUFFIX
from tasks.inputs.shards import Shard, is_remote
from tasks.storage import FileEntry, InputNotFound, Location, StorageError
from tasks.storage.concurrent import at_once


def check_inputs(shards: Sequence[Shard], capture_dir: Location) -> None:
    """Raise ``InputNotFound`` for a missing rollouts file, failures sidecar or capture directory.

    A run over a typo would otherwise report every attempt as ``no_records`` (or fail in
    discovery, after its run directory was claimed).
    """
    checks: list[tuple[Location, str, Callable[[], bool]]] = []
    for shard in shards:
        checks.append((shard.main, "rollouts file", shard.main.is_file))
        if shard.failures is not None:  # an explicit --failures
            checks.append((shard.failures, "failures sidecar", shard.failures.is_file))
    checks.append((capture_dir, "capture directory", capture_dir.is_dir))
    found = at_once(
        [functools.partial(_outcome, check) for _, _, check in checks], remote=is_remote([location for location, _, _ in checks])
    )
    for (location, what, _), outcome in zip(checks, found, strict=True):  # the first to fail, in order, says why
        if isinstance(outcome, Exception):
            raise outcome
        if not outcome:
            wanted_folder = location is capture_dir
            if _other_kind(location, wanted_folder):  # said so: "not found" misled
                kind = "a file, not a folder" if wanted_folder else "a folder, not a file"
                raise InputNotFound(location.display, f"{kind} ({what} expected)")
            raise InputNotFound(location.url, f"{what} not found")


def _other_kind(location: Location, wanted_folder: bool) -> bool:
    """Whether a missing folder is a file, or a missing file a folder; False when that cannot be told."""
    try:
        return location.is_file() if wanted_folder else location.is_dir()
    except StorageError:
        return False


FIRST_READ_BYTES = 2**16
"""The head of a rollouts file read to find its first row (one ranged GET); a longer first line streams the file."""


class NoRows(ValueError):
    """A job whose rollouts files (and failures sidecars) hold no row: nothing a run could process."""


def check_rows(shards: Sequence[Shard]) -> None:
    """Raise ``NoRows`` when no rollouts file or failures sidecar of the job holds a JSON-object line.

    An empty file, or 200 KB of random bytes, made a run of 0 rows that became ``LATEST``. The
    first file with a row ends the search, usually at its first line (one small read); a job
    whose rollouts all failed (rows in the sidecar only) is a job.
    """
    lines = 0
    files = [location for shard in shards for location in (shard.main, shard.failures) if location is not None]
    for location in files:
        found, not_rows = _first_row(location)
        if found:
            return
        lines += not_rows
    sidecars = " and their sidecars" if len(files) > len(shards) else ""
    what = files[0].display if len(files) == 1 else f"{len(shards)} rollouts files{sidecars}"
    if not lines:
        raise NoRows(f"{what}: no rollout rows (empty): nothing to run")
    raise NoRows(f"{what}: no rollout rows: {lines} non-blank line{'s' if lines != 1 else ''}, none a JSON object")


def _is_row(raw: bytes) -> bool:
    """Discovery's rule (``tasks.discover.scan``): a non-blank line that parses as a JSON object."""
    try:
        return isinstance(orjson.loads(raw), dict)
    except orjson.JSONDecodeError:
        return False


def _first_row(location: Location) -> tuple[bool, int]:
    """Whether the file holds a row, and how many non-blank lines before it are not rows."""
    head = location.read_range(0, FIRST_READ_BYTES)
    whole = len(head) < FIRST_READ_BYTES
    lines = head.split(b"\n") if whole else head.split(b"\n")[:-1]  # the last piece of a cut head may be half a line
    not_rows = 0
    for raw in lines:
        if not raw.strip():
            continue
        if _is_row(raw):
            return True, not_rows
        not_rows += 1
    if whole:
        return False, not_rows
    not_rows = 0
    for _, _, raw in location.iter_lines():
        if raw.strip():
            if _is_row(raw):
                return True, not_rows
            not_rows += 1
    return False, not_rows


def _outcome(check: Callable[[], bool]) -> bool | Exception:
    """A check's answer, or the error it raised (told in order with the others' answers)."""
    try:
        return check()
    except Exception as exc:  # noqa: BLE001 - raised again by check_inputs when no earlier input is missing
        return exc


@dataclass(frozen=True, slots=True)
class JobInputs:
    """Every input file: the rollouts file(s) by name, and the capture folder's files by name."""

    files: dict[str, FileEntry]
    capture_folder: str
    captures: list[FileEntry]  # sorted by name

    def items(self) -> Iterator[tuple[str, FileEntry]]:
        """(relative name, entry) of every input, sorted by relative name (made as they are read)."""
        listed = ((f"{self.capture_folder}/{entry.name}", entry) for entry in self.captures)
        return heapq.merge(sorted(self.files.items()), listed, key=_relative_name)


def _relative_name(item: tuple[str, FileEntry]) -> str:
    return item[0]


def list_inputs(shards: Sequence[Shard], capture_dir: Location) -> JobInputs:
    """Every input file, from one HEAD per rollouts file or sidecar (made at once) and one LIST of the capture directory."""
    check_inputs([Shard(shard.main) for shard in shards], capture_dir)  # a missing sidecar is reported by its entry() just below
    located = [location for shard in shards for location in (shard.main, shard.failures, shard.materialized) if location is not None]
    entries = at_once([location.entry for location in located], remote=is_remote(located))
    files = {location.name: entry for location, entry in zip(located, entries, strict=True)}
    return JobInputs(files, capture_dir.name, capture_entries(capture_dir))


def capture_entries(capture_dir: Location) -> list[FileEntry]:
    """The capture folder's files, and its folders named as a capture file or marker: 0.7.0's
    lookups find those as they find files. Such a folder's entry has no size or version (0.7.0
    asks only whether the name exists; what is inside never changes an attempt), and an S3
    prefix named as an object that exists is not listed (the object is the capture)."""
    listed = capture_dir.list_files(folders=True)
    names = {entry.name for entry in listed if not entry.folder}
    return [
        entry if not entry.folder else FileEntry(entry.name, 0, "", folder=True)
        for entry in listed
        if not entry.folder or (entry.name.endswith((CAPTURE_SUFFIX, MARKER_SUFFIX)) and entry.name not in names)
    ]


def fingerprint_inputs(inputs: JobInputs) -> str:
    """The job fingerprint: sha256 over the sorted (relative path, size, version) of every input."""
    return fingerprint_files(inputs.items())


def fingerprint_files(items: Iterable[tuple[str, FileEntry]]) -> str:
    """sha256 over each file's (relative name, size, version), in the order given: a job's or one shard's."""
    digest = hashlib.sha256()
    for rel, entry in items:
        digest.update(name_bytes(rel) + f"\0{entry.size}\0{entry.version}\n".encode())
    return digest.hexdigest()


def name_bytes(name: str) -> bytes:
    """A file name's bytes: a local name that is not UTF-8 arrives with its bytes escaped as surrogates."""
    return name.encode("utf-8", "surrogateescape")


def shown_name(name: str) -> str:
    """A file name as the manifest shows it: bytes that are not UTF-8 as ``\\xNN`` (JSON cannot hold them)."""
    return name_bytes(name).decode("utf-8", "backslashreplace")
