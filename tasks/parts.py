"""Where attempts' parts live: batched into segments under ``<run>/attempts/<source>/``.

A part (:mod:`evidence.attempt.part`) is one attempt's encoded outcome. A group task writes its
parts in *segments*, each holding the parts of a run of consecutive attempts, so an object store
sees one PUT per segment instead of one per attempt, and the reduce one GET. A segment is written
atomically and named by its first and last line::

    attempts/<source>/<first:09d>-<last:09d>.seg

    evidence-segment/1\\n
    [[line, fingerprint, length], ...]\\n      the index: one entry per part, in line order
    <part><part>...                           the parts back to back

A segment that exists is complete, so resume and task retries trust every part in it whose
fingerprint matches the attempt as it is now. Segments of a retried group may overlap older
ones (an input changed between runs): the index keeps, per line, the entry whose fingerprint
is current.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import orjson

from evidence import AttemptPart, decode_part
from tasks.discover import AttemptRef
from tasks.prefetch import ordered_prefetch
from tasks.storage import InputNotFound, Location, PermanentStorageError

__all__ = [
    "ATTEMPTS_FOLDER",
    "PartEntry",
    "PartIndex",
    "PartMissing",
    "SegmentWriter",
    "encode_segment",
    "segment_folder",
    "segment_parts",
]

ATTEMPTS_FOLDER = "attempts"
SEGMENT_SUFFIX = ".seg"
SEGMENT_PARTS = 64
SEGMENT_BYTES = 8 * 2**20
"""A segment is flushed at this many parts or bytes, whichever comes first."""
INDEX_READ_BYTES = 64 * 1024
"""The first bytes of a segment read to learn its index (a longer index is read whole)."""

_MAGIC = b"evidence-segment/1"


class PartMissing(PermanentStorageError):
    """The reduce found no current part for an attempt (its segment is gone or stale)."""


def segment_folder(run_dir: Location, source: str) -> Location:
    return run_dir.child(ATTEMPTS_FOLDER, source)


def encode_segment(parts: list[tuple[AttemptRef, list[bytes]]]) -> list[bytes]:
    """The segment of ``parts`` (attempt, encoded part), in line order, in pieces (the parts' own)."""
    index = [[attempt.line, attempt.fingerprint, sum(map(len, data))] for attempt, data in parts]
    return [_MAGIC + b"\n" + orjson.dumps(index) + b"\n", *(piece for _, data in parts for piece in data)]


def segment_name(parts: list[tuple[AttemptRef, list[bytes]]]) -> str:
    return f"{parts[0][0].line:09d}-{parts[-1][0].line:09d}{SEGMENT_SUFFIX}"


class SegmentWriter:
    """Collects a group's encoded parts and hands each full segment to ``write`` (name, pieces)."""

    def __init__(self, write: Callable[[str, list[bytes]], None]) -> None:
        self._write = write
        self._parts: list[tuple[AttemptRef, list[bytes]]] = []
        self._bytes = 0

    def add(self, attempt: AttemptRef, data: list[bytes]) -> None:
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


class PartIndex:
    """Which segment holds each attempt's current part, for one source of a run.

    Built from one listing of the source's folder and one small ranged read per segment; damaged
    or foreign files in the folder are ignored (their attempts are redone).
    """

    def __init__(self, folder: Location, lines: range | None = None) -> None:
        self._folder = folder
        self._entries: dict[int, list[PartEntry]] = {}
        try:
            sizes = {entry.name: entry.size for entry in folder.list_files() if entry.name.endswith(SEGMENT_SUFFIX)}
        except InputNotFound:
            sizes = {}
        names = [name for name in sizes if lines is None or _overlaps(name, lines)]
        for name, head in zip(names, ordered_prefetch(self._head, names), strict=True):
            self._add(name, head, sizes[name])

    def _head(self, name: str) -> bytes:
        location = self._folder.child(name)
        head = location.read_range(0, INDEX_READ_BYTES)
        if _index_of(head) is None and len(head) == INDEX_READ_BYTES:
            head = location.read_bytes()
        return head

    def _add(self, name: str, head: bytes, size: int) -> None:
        index = _index_of(head)
        offset = _index_start(head)
        if index is None or offset + sum(length for _, _, length in index) != size:
            return  # not a segment, or damaged: its attempts are redone
        for line, fingerprint, length in index:
            self._entries.setdefault(line, []).append(PartEntry(name, offset, length, fingerprint))
            offset += length

    def current(self, attempt: AttemptRef) -> PartEntry | None:
        """The entry of a part made from the attempt as it is now, if any."""
        return next((e for e in self._entries.get(attempt.line, ()) if e.fingerprint == attempt.fingerprint), None)

    def read(self, attempts: Iterable[AttemptRef]) -> Iterator[tuple[AttemptRef, AttemptPart]]:
        """Each attempt's current part, in the given order; each segment read once (ahead)."""

        def runs() -> Iterator[tuple[str, list[tuple[AttemptRef, PartEntry]]]]:
            run: list[tuple[AttemptRef, PartEntry]] = []
            for attempt in attempts:
                entry = self.current(attempt)
                if entry is None:
                    raise PartMissing(self._folder.url, f"no current part for attempt {attempt.key}")
                if run and run[-1][1].segment != entry.segment:
                    yield run[0][1].segment, run
                    run = []
                run.append((attempt, entry))
            if run:
                yield run[0][1].segment, run

        def load(item: tuple[str, list[tuple[AttemptRef, PartEntry]]]) -> list[tuple[AttemptRef, AttemptPart]]:
            name, run = item
            data = self._folder.child(name).read_view()  # segments are immutable once renamed into place
            return [(attempt, decode_part(data[e.offset : e.offset + e.length])) for attempt, e in run]

        for parts in ordered_prefetch(load, runs(), window=2):
            yield from parts


def _overlaps(name: str, lines: range) -> bool:
    """Whether the segment file ``name`` may hold parts of ``lines``."""
    try:
        first, last = (int(n) for n in name[: -len(SEGMENT_SUFFIX)].split("-"))
    except ValueError:
        return False
    return first <= lines.stop - 1 and last >= lines.start
