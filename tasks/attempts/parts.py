"""Where attempts' parts live: batched into segments under ``<run>/attempts/<source>/``.

A part (:mod:`evidence.attempt.part`) is one attempt's encoded outcome. A group task writes its
parts in *segments*, each holding the parts of a run of consecutive attempts, so an object store
sees one PUT per segment instead of one per attempt, and the reduce one GET. A segment is written
atomically, never over another, and named by its first and last line and a random token::

    attempts/<source>/<first:09d>-<last:09d>-<token>.seg

    evidence-segment/1\\n
    [[line, fingerprint, length], ...]\\n      the index: one entry per part, in line order
    <part><part>...                           the parts back to back

A segment that exists is complete, so resume and task retries trust every part in it whose
fingerprint matches the attempt as it is now. Segments of a retried group may overlap older
ones (an input changed between runs): the index keeps, per line, the entry whose fingerprint
is current.
"""

from __future__ import annotations

import functools
import secrets
import sys
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass

import orjson

from evidence import AttemptPart, decode_part
from evidence.attempt import decode_part_located
from tasks.discover.refs import AttemptRef
from tasks.rundir import RunPaths
from tasks.storage import InputNotFound, Location, PermanentStorageError, release_view
from tasks.storage.concurrent import ordered_prefetch
from tasks.storage.lines import FilePlace

__all__ = [
    "SEGMENT_PARTS",
    "PartEntry",
    "PartIndex",
    "PartMissing",
    "ReusedParts",
    "SegmentWriter",
    "encode_segment",
    "read_parts",
    "segment_folder",
    "segment_parts",
]

SEGMENT_SUFFIX = ".seg"
SEGMENT_PARTS = 64
SEGMENT_BYTES = 8 * 2**20
"""A segment is flushed at this many parts or bytes, whichever comes first."""
HEADS_IN_FLIGHT = 16
SEGMENTS_IN_FLIGHT = 2
"""Segment heads, and whole segments, read ahead on an object store (``io_window``: none locally)."""
INDEX_READ_BYTES = 64 * 1024
"""The first bytes of a segment read to learn its index (a longer index is read whole)."""

_MAGIC = b"evidence-segment/1"


class PartMissing(PermanentStorageError):
    """The reduce found no current part for an attempt (its segment is gone or stale)."""


def segment_folder(run_dir: Location, source: str) -> Location:
    return RunPaths(run_dir).attempts.child(source)


def encode_segment(parts: list[tuple[AttemptRef, list[bytes | memoryview]]]) -> list[bytes | memoryview]:
    """The segment of ``parts`` (attempt, encoded part), in line order, in pieces (the parts' own)."""
    index = [[attempt.line, attempt.fingerprint, sum(map(len, data))] for attempt, data in parts]
    return [_MAGIC + b"\n" + orjson.dumps(index) + b"\n", *(piece for _, data in parts for piece in data)]


def segment_name(parts: list[tuple[AttemptRef, list[bytes | memoryview]]]) -> str:
    """``<first line>-<last line>-<token>.seg``: the random token keeps a segment written by a
    resume from replacing an older one with the same first and last lines whose other parts are
    still current (only the changed attempts are redone)."""
    return f"{parts[0][0].line:09d}-{parts[-1][0].line:09d}-{secrets.token_hex(4)}{SEGMENT_SUFFIX}"


class SegmentWriter:
    """Collects a group's encoded parts and hands each full segment to ``write`` (name, pieces)."""

    def __init__(self, write: Callable[[str, list[bytes | memoryview]], None]) -> None:
        self._write = write
        self._parts: list[tuple[AttemptRef, list[bytes | memoryview]]] = []
        self._bytes = 0

    def add(self, attempt: AttemptRef, data: list[bytes | memoryview]) -> None:
        self._parts.append((attempt, data))
        self._bytes += sum(map(len, data))
        if len(self._parts) >= SEGMENT_PARTS or self._bytes >= SEGMENT_BYTES:
            self.flush()

    def flush(self) -> None:
        if self._parts:
            self._write(segment_name(self._parts), encode_segment(self._parts))
        self._parts, self._bytes = [], 0


@dataclass(frozen=True, slots=True)
class PartEntry:
    """Where one part is: its segment, its offset and length there, and its fingerprint."""

    segment: str
    offset: int
    length: int
    fingerprint: str


def _index_of(data: bytes) -> list[tuple[int, str, int]] | None:
    """The index at the head of a segment's bytes, or None when the head is incomplete or not a segment."""
    magic_end = data.find(b"\n")
    index_end = data.find(b"\n", magic_end + 1)
    if magic_end < 0 or data[:magic_end] != _MAGIC:
        return None
    if index_end < 0:
        return None
    try:
        return [(line, fingerprint, length) for line, fingerprint, length in orjson.loads(data[magic_end + 1 : index_end])]
    except (ValueError, TypeError):
        return None


def segment_parts(data: bytes) -> Iterator[tuple[int, AttemptPart]]:
    """``(line, part)`` of every part in a whole segment's bytes (inspection, tests)."""
    index = _index_of(data)
    if index is None:
        raise PartMissing("segment", "not an evidence-stage segment")
    offset = _index_start(data)
    for line, _, length in index:
        yield line, decode_part(data[offset : offset + length])
        offset += length


def _index_start(data: bytes) -> int:
    return data.find(b"\n", data.find(b"\n") + 1) + 1


@dataclass(frozen=True, slots=True)
class _Segment:
    """A segment file as listed: its name, the lines its name says it holds, and its size."""

    name: str
    first: int
    last: int
    size: int


def _segments(folder: Location, lines: range) -> list[_Segment]:
    """The folder's segments that may hold parts of ``lines``, by first line, then last (name
    order while lines have nine digits); a file whose name is not a segment's is no segment."""
    try:
        files = folder.list_files()
    except InputNotFound:
        return []
    found = []
    for entry in files:
        span = _span(entry.name)
        if span is not None and span[0] <= lines.stop - 1 and span[1] >= lines.start:
            found.append(_Segment(entry.name, span[0], span[1], entry.size))
    found.sort(key=lambda segment: (segment.first, segment.last, segment.name))
    return found


def _span(name: str) -> tuple[int, int] | None:
    """The first and last line a segment's name gives, or None for another file (a name without
    the token is a segment of a run written before it had one)."""
    if not name.endswith(SEGMENT_SUFFIX):
        return None
    fields = name[: -len(SEGMENT_SUFFIX)].split("-")
    if len(fields) not in (2, 3):
        return None
    try:
        return int(fields[0]), int(fields[1])
    except ValueError:
        return None


def _heads(folder: Location, segments: list[_Segment]) -> Generator[bytes, None, None]:
    """Each segment's head, in order (read ahead on an object store)."""
    return ordered_prefetch(functools.partial(_head, folder), segments, window=HEADS_IN_FLIGHT, remote=not folder.is_local)


def _head(folder: Location, segment: _Segment) -> bytes:
    """The first bytes of a segment, enough to hold its index (the whole file when the index is longer)."""
    location = folder.child(segment.name)
    head = location.read_range(0, INDEX_READ_BYTES)
    if _index_of(head) is None and len(head) == INDEX_READ_BYTES:
        head = location.read_bytes()
    return head


def _entries(segment: _Segment, head: bytes) -> dict[int, PartEntry] | None:
    """Where each of the segment's parts is, by line; None for a damaged or foreign file (its
    attempts are redone): no index, parts that do not add up to its size, a line twice, or
    lines its name does not cover."""
    index = _index_of(head)
    offset = _index_start(head)
    if index is None or offset + sum(length for _, _, length in index) != segment.size:
        return None
    entries: dict[int, PartEntry] = {}
    for line, fingerprint, length in index:
        if not segment.first <= line <= segment.last or line in entries:
            return None
        entries[line] = PartEntry(segment.name, offset, length, fingerprint)
        offset += length
    return entries


class PartIndex:
    """Which segment holds each current part of a range of lines, for one source of a run (a
    group's resume check).

    Built from one listing of the source's folder and one small ranged read per segment whose
    name overlaps the range; damaged or foreign files in the folder are ignored (their attempts
    are redone). Where segments overlap (a retried group), the first (by first line, then last)
    with a current part wins.
    """

    def __init__(self, folder: Location, lines: range) -> None:
        self._entries: dict[int, list[PartEntry]] = {}
        segments = _segments(folder, lines)
        heads = _heads(folder, segments)
        for segment, head in zip(segments, heads, strict=True):
            for line, entry in (_entries(segment, head) or {}).items():
                self._entries.setdefault(line, []).append(entry)

    def current(self, attempt: AttemptRef) -> PartEntry | None:
        """The entry of a part made from the attempt as it is now, if any."""
        return _current(self._entries.get(attempt.line, ()), attempt)


class ReusedParts:
    """How many attempts have a current part already, counted as discovery plans them: what a
    resume reuses (its groups check again as they run). One ``PartIndex`` per part folder, over
    all its lines, made when the folder's first attempt is counted: before the fan-out has a
    group of that folder, whose new parts it must not count."""

    def __init__(self, run_dir: Location) -> None:
        self._run_dir = run_dir
        self._indexes: dict[str, PartIndex] = {}
        self.count = 0

    def add(self, attempt: AttemptRef) -> None:
        folder = attempt.part_folder
        index = self._indexes.get(folder)
        if index is None:
            index = self._indexes[folder] = PartIndex(segment_folder(self._run_dir, folder), range(1, sys.maxsize))
        self.count += index.current(attempt) is not None


class _OpenSegments:
    """The segments whose lines include the current one, as attempts advance in line order.

    A segment's head is read when the lines reach its first line (on an object store, read ahead
    in a bounded window) and dropped after its last, so the reduce holds a few segments' entries, not one
    entry per attempt of the job (at 20,000 attempts those were ~7 MiB of the flow's peak).
    """

    def __init__(self, folder: Location, heads: Iterator[bytes], segments: list[_Segment]) -> None:
        self._folder = folder
        self._heads = heads
        self._waiting = deque(segments)
        self._open: list[tuple[int, dict[int, PartEntry]]] = []  # (last line, entries) of each open segment
        self._line = 0

    def current(self, attempt: AttemptRef) -> PartEntry | None:
        """The entry of the attempt's current part, from the first segment (by first line, then last).

        Raises:
            ValueError: the attempts do not come in line order.
        """
        line = attempt.line
        if line < self._line:
            raise ValueError(f"attempts out of line order in {self._folder.url}: {line} after {self._line}")
        self._line = line
        while self._waiting and self._waiting[0].first <= line:
            segment = self._waiting.popleft()
            entries = _entries(segment, next(self._heads))
            if entries is not None:
                self._open.append((segment.last, entries))
        self._open = [(last, entries) for last, entries in self._open if last >= line]
        return _current((entry for _, entries in self._open if (entry := entries.get(line)) is not None), attempt)


def _current(entries: Iterable[PartEntry], attempt: AttemptRef) -> PartEntry | None:
    """The first of a line's entries (segments taken by first line, then last) made from the attempt as it is now."""
    return next((entry for entry in entries if entry.fingerprint == attempt.fingerprint), None)


def read_parts(folder: Location, attempts: Sequence[AttemptRef]) -> Iterator[tuple[AttemptRef, AttemptPart, FilePlace | None]]:
    """Each attempt's current part from the folder's segments that may hold the attempts' lines
    (so a group of a running fan-out is read without listing the segments of the groups after
    it), attempts in line order; each
    segment read once (ahead, on an object store), its head as the lines reach it, its cached pages let go once
    the reader is past it (``release_view``). With each part, where its line lies in a local
    segment file (None on an object store), for ``LineWriter``.

    Raises:
        PartMissing: an attempt has no current part (its segment is gone, stale or damaged).
    """
    if not attempts:
        return
    lines = [attempt.line for attempt in attempts]
    segments = _segments(folder, range(min(lines), max(lines) + 1))
    remote = not folder.is_local
    heads = _heads(folder, segments)
    index = _OpenSegments(folder, heads, segments)

    def runs() -> Iterator[list[tuple[AttemptRef, PartEntry]]]:
        run: list[tuple[AttemptRef, PartEntry]] = []
        for attempt in attempts:
            entry = index.current(attempt)
            if entry is None:
                raise PartMissing(folder.url, f"no current part for attempt {attempt.key}")
            if run and run[-1][1].segment != entry.segment:
                yield run
                run = []
            run.append((attempt, entry))
        if run:
            yield run

    def load(run: list[tuple[AttemptRef, PartEntry]]) -> tuple[bytes | memoryview, list[tuple[AttemptRef, AttemptPart, FilePlace | None]]]:
        segment = folder.child(run[0][1].segment)
        data = segment.read_view()  # segments are immutable once renamed into place
        path = None if remote else segment.path
        parts = []
        for attempt, e in run:
            part, line_at = decode_part_located(data[e.offset : e.offset + e.length])
            parts.append((attempt, part, None if path is None else FilePlace(path, e.offset + line_at)))
        return data, parts

    try:
        for data, parts in ordered_prefetch(load, runs(), window=SEGMENTS_IN_FLIGHT, remote=remote):
            yield from parts
            release_view(data)  # the reader wrote each line before asking for the next; ATIF texts are copies
    finally:
        heads.close()
