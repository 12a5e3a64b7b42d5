"""Discovery: a job's inputs -> one attempt per row, each with its capture file and fingerprint.

The attempt key is ``(source, line)``, or ``(shard, source, line)`` in a job of several rollouts
files (shards, ``tasks.inputs.shards``); the rollout id is evidence that can repeat or be invalid,
so it never names a file here. Capture files claimed by no row are orphans: reported, never read.
The plan keeps its per-attempt and per-file records in local spills, so a job of 20,000
attempts costs the flow no more memory than one of 2,000 (README, guarantee 6).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
import pickle
import tempfile
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import Any

import orjson

from evidence import CAPTURE_SUFFIX, MARKER_SUFFIX, PART_VERSION, ShardAccount, accounted_fields, capture_file_id, run_accounting
from tasks.discover.inputs import JobInputs, fingerprint_files, fingerprint_inputs, list_inputs, shown_name
from tasks.discover.refs import FAILURES, MAIN, AttemptRef, SkippedLine
from tasks.inputs.shards import Shard
from tasks.storage import FileEntry, Location, TransientStorageError
from tasks.storage.spill import Spill, TemporaryStore

# A rollouts file at least twice this long is scanned in spans of this size by the attempt pool,
# this many at a time (what the flow holds of the file's rows: their scanned lines, no bytes).
SCAN_SPAN_BYTES = 32 * 2**20
SCAN_SPANS_IN_FLIGHT = 4
SCAN_TRIES = 3
"""A scan failing on transient storage errors (past each read's own retries) is made this many times in all."""


class JobPlan(TemporaryStore):
    """Everything discovery learned about a job: spilled attempts and input files, the rest small."""

    def __init__(self) -> None:
        self.attempts: Spill[AttemptRef] = Spill()  # input order: every shard's main, then every shard's failures
        self.inputs: Spill[tuple[str, FileEntry]] = Spill()  # (relative name, entry) by name, names as shown
        self.skipped: list[SkippedLine] = []
        self.orphans: list[str] = []
        self.fingerprint = ""
        self.shards: list[dict[str, Any]] = []  # per rollouts file: its files' fingerprint and row counts
        self.accounting: dict[str, Any] = {}  # expected / landed / failed / lost (evidence.accounting)

    def close(self) -> None:
        self.attempts.close()
        self.inputs.close()


def _attempt_fingerprint(line: bytes, capture: FileEntry | None, incomplete: bool) -> str:
    """What an attempt's part is made from: its row, its capture as listed, its marker, and the
    part format, so a resume redoes the parts an older version wrote instead of failing to read them."""
    digest = hashlib.sha256(line)
    listed = f"{capture.size}\0{capture.version}\0{int(capture.folder)}" if capture else "-1\0\0"
    digest.update(f"\0{listed}\0{int(incomplete)}\0{PART_VERSION}".encode())
    return digest.hexdigest()


def _shard_summaries(
    shards: Sequence[Shard], inputs: JobInputs, rows: Counter[tuple[int | None, str]], sharded: bool
) -> list[dict[str, Any]]:
    """What the manifest says of each rollouts file: its sidecars, rows per source, and a fingerprint of its files."""
    summaries = []
    for k, shard in enumerate(shards):
        files = sorted(loc.name for loc in (shard.main, shard.failures, shard.materialized) if loc is not None)
        index = k if sharded else None
        summaries.append(
            {
                "file": shard.name,
                "rollouts": shard.main.url,
                "failures": shard.failures.url if shard.failures is not None else None,
                "materialized_inputs": shard.materialized.url if shard.materialized is not None else None,
                "rows": {MAIN: rows[(index, MAIN)], FAILURES: rows[(index, FAILURES)]},
                "fingerprint": fingerprint_files((name, inputs.files[name]) for name in files),
            }
        )
    return summaries


class Discovery(TemporaryStore):
    """A job's discovery as a producer the fan-out pulls from: its inputs listed when made, each
    attempt yielded by ``attempts()`` as soon as the scan plans it, in input order, and ``plan``
    complete once the last is yielded.

    So the fan-out's first group starts once a group's worth of rows is scanned, not after the
    whole job is read and fingerprinted; meanwhile ``estimate()`` gives the attempts the plan will
    hold (guided group sizes and the progress total need one), exact once the scan has ended.
    A scan that fails on a transient storage error (past its reads' own retries) is made again
    from the start, as the discovery task's Prefect retries made it before the scan streamed
    (``SCAN_TRIES``); what it plans again is not handed out again (the same bytes plan the same
    attempts).

    With ``pool`` (the attempt pool), spans of a long rollouts file are scanned by its workers.
    With ``keep`` (a subset run), only the attempts it accepts are planned and accounted: the
    run's accounting counts the rows it holds, and owes nothing.
    """

    def __init__(
        self,
        shards: Sequence[Shard],
        capture_dir: Location,
        pool: Executor | None = None,
        keep: Callable[[AttemptRef], bool] | None = None,
    ) -> None:
        started = time.perf_counter()
        self._shards, self._pool, self._keep = shards, pool, keep
        self._inputs = list_inputs(shards, capture_dir)
        sharded = len(shards) > 1
        self._sources = [
            (k if sharded else None, source, location, self._inputs.files[location.name].size)
            for source in (MAIN, FAILURES)
            for k, shard in enumerate(shards)
            if (location := shard.main if source == MAIN else shard.failures) is not None
        ]
        *starts, self._bytes = itertools.accumulate((size for *_, size in self._sources), initial=0)
        self._before = {(k, source): start for (k, source, *_), start in zip(self._sources, starts, strict=True)}  # bytes before each file
        self._scanned = 0  # bytes of the rollouts files up to the end of the last attempt planned
        self.plan = JobPlan()
        self.done = False
        self.seconds = time.perf_counter() - started  # discovery's own: the listing, the scan, the plan's summaries

    def estimate(self) -> int:
        """The attempts the plan will hold: exact once the scan has ended, else those planned so
        far scaled by the bytes of the rollouts files against the bytes scanned to plan them."""
        count = self.plan.attempts.count
        if self.done or not self._scanned:
            return count
        return max(count, round(count * self._bytes / self._scanned))

    def attempts(self) -> Iterator[AttemptRef]:
        """Each attempt, in input order, as the scan plans it; ``plan`` is complete once the last is yielded."""
        handed = 0
        for tries in range(1, SCAN_TRIES + 1):
            clock = time.perf_counter()
            if tries > 1:  # a new plan: the failed scan's skipped lines and accounts are its own
                self.plan.close()
                self.plan = JobPlan()
            try:
                for planned, attempt in enumerate(self._scan(self.plan), 1):
                    if planned > handed:  # the first ``handed`` of a scan made again went out already
                        handed = planned
                        self.seconds += time.perf_counter() - clock
                        yield attempt
                        clock = time.perf_counter()
            except TransientStorageError:
                if tries == SCAN_TRIES:
                    raise
                continue
            self.seconds += time.perf_counter() - clock
            self.done = True
            return

    def _scan(self, plan: JobPlan) -> Iterator[AttemptRef]:
        """One scan of the job into ``plan``: each attempt as it is planned, then the plan's summaries."""
        keep = self._keep
        accounts = [ShardAccount(shard.name, shard.materialized is not None and keep is None) for shard in self._shards]
        rows: Counter[tuple[int | None, str]] = Counter()
        for attempt in _scan(plan, self._sources, self._inputs.captures, accounts, rows, self._pool, keep):
            self._scanned = self._before[(attempt.shard, attempt.source)] + attempt.offset + attempt.length + 1
            yield attempt
        for shard, account in zip(self._shards, accounts, strict=True):
            if shard.materialized is not None and keep is None:
                _read_inventory(shard.materialized, account)
        plan.accounting = run_accounting(accounts, subset=keep is not None)
        describe_inputs(plan, self._shards, self._inputs, rows)

    def close(self) -> None:
        self.plan.close()


def discover(
    shards: Sequence[Shard],
    capture_dir: Location,
    pool: Executor | None = None,
    keep: Callable[[AttemptRef], bool] | None = None,
) -> JobPlan:
    """The job's whole plan at once (``Discovery`` scanned to its end): for a caller that needs
    every attempt before it starts, such as the tests and tools that read a plan."""
    discovery = Discovery(shards, capture_dir, pool, keep)
    try:
        for _ in discovery.attempts():
            pass
    except BaseException:
        discovery.close()
        raise
    return discovery.plan


def describe_inputs(plan: JobPlan, shards: Sequence[Shard], inputs: JobInputs, rows: Counter[tuple[int | None, str]]) -> None:
    """What the manifest says of the job's files, into ``plan``: the job fingerprint, each shard's summary, every input file."""
    plan.fingerprint = fingerprint_inputs(inputs)
    plan.shards = _shard_summaries(shards, inputs, rows, len(shards) > 1)
    for rel, entry in inputs.items():
        plan.inputs.add((shown_name(rel), replace(entry, name=shown_name(entry.name))))


def orphans(listing: Iterable[str], claimed: set[str]) -> list[str]:
    """The capture files and markers (names as shown) of rollout ids no row claims."""
    return sorted(shown_name(name) for name in listing if (owner := _capture_id_of_file(name)) is not None and owner not in claimed)


def _read_inventory(location: Location, account: ShardAccount) -> None:
    """Every non-blank line of a shard's materialized inputs is one rollout it owed."""
    for _, _, raw in location.iter_lines():
        if raw.strip():
            try:
                account.expect(orjson.loads(raw))
            except orjson.JSONDecodeError:
                account.expect(None)


@dataclass(frozen=True, slots=True)
class ScannedLine:
    """What discovery learns from one non-blank line; ``skipped`` says why it cannot be a row."""

    line: int  # 1-based within its span
    offset: int
    length: int
    skipped: str | None
    accounted: dict[str, Any]  # evidence.accounted_fields of the row
    rollout_id: str | None
    capture: FileEntry | None
    incomplete: bool
    fingerprint: str


@dataclass(frozen=True, slots=True)
class ScannedSpan:
    """The lines starting in one byte span of a rollouts file: how many, and the non-blank ones."""

    lines: int
    rows: list[ScannedLine]


@dataclass(frozen=True, slots=True)
class ListingFile:
    """The capture listing pickled once to a local file, for the attempt workers that scan spans.

    Sent with every span, the listing itself was pickled by the flow and unpickled by a worker
    once per span: at 50,000 rollouts (53,010 captures, 3.4 MB pickled, about 0.4 s a round
    trip, 180 spans) most of discovery's 51 s. Its path is pickled instead, and each worker
    loads the file once (``_loaded``).
    """

    path: str

    def listing(self) -> dict[str, FileEntry]:
        return _loaded(self.path)


@functools.lru_cache(maxsize=1)
def _loaded(path: str) -> dict[str, FileEntry]:
    with open(path, "rb") as file:
        listing: dict[str, FileEntry] = pickle.load(file)
    return listing


@contextmanager
def _listing_file(listing: Mapping[str, FileEntry]) -> Iterator[ListingFile]:
    """``listing`` in a local temporary file, deleted on exit."""
    fd, path = tempfile.mkstemp(prefix="evidence-stage-listing-", suffix=".pickle")
    try:
        with os.fdopen(fd, "wb") as file:
            pickle.dump(dict(listing), file, protocol=pickle.HIGHEST_PROTOCOL)
        yield ListingFile(path)
    finally:
        os.unlink(path)


def scan_span(location: Location, listing: Mapping[str, FileEntry] | ListingFile, start: int = 0, end: int | None = None) -> ScannedSpan:
    """Parse every line starting in ``[start, end)`` once; runs in the flow or in an attempt worker."""
    if isinstance(listing, ListingFile):
        listing = listing.listing()
    return scan_lines(location.iter_lines(start, end), listing)


def scan_lines(lines: Iterable[tuple[int, int, bytes]], listing: Mapping[str, FileEntry]) -> ScannedSpan:
    """Parse each ``(line number, offset, line)`` once: a span of a file, or the new lines of a followed one."""
    rows, count = [], 0
    for count, offset, raw in lines:
        if raw.strip():
            rows.append(_scan_line(count, offset, raw, listing))
    return ScannedSpan(count, rows)


def attempt_ref(scanned: ScannedLine, source: str, line: int, out_line: int, shard: int | None) -> AttemptRef:
    """The attempt of a scanned row at ``line`` of its file (``out_line`` of its source's output)."""
    return AttemptRef(
        source=source,
        line=line,
        offset=scanned.offset,
        length=scanned.length,
        out_line=out_line,
        rollout_id=scanned.rollout_id,
        capture=scanned.capture,
        incomplete=scanned.incomplete,
        fingerprint=scanned.fingerprint,
        shard=shard,
    )


def _scan_line(line: int, offset: int, raw: bytes, listing: Mapping[str, FileEntry]) -> ScannedLine:
    try:
        row = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return ScannedLine(line, offset, len(raw), _not_json(raw, exc), {}, None, None, False, "")
    if not isinstance(row, dict):
        return ScannedLine(line, offset, len(raw), f"not a JSON object: {type(row).__name__}", {}, None, None, False, "")
    rollout_id = capture_file_id(row)
    capture = listing.get(rollout_id + CAPTURE_SUFFIX) if rollout_id is not None else None
    incomplete = rollout_id is not None and (rollout_id + MARKER_SUFFIX) in listing
    fingerprint = _attempt_fingerprint(raw, capture, incomplete)
    return ScannedLine(line, offset, len(raw), None, accounted_fields(row), rollout_id, capture, incomplete, fingerprint)


def _not_json(raw: bytes, exc: orjson.JSONDecodeError) -> str:
    """Why a line is no JSON: its first byte that is not UTF-8 (counted from 1 in the line) when
    there is one, which orjson reported as "surrogates not allowed: line 1 column 1"."""
    try:
        raw.decode()
    except UnicodeDecodeError as bad:
        return f"invalid UTF-8 at byte {bad.start + 1}"
    return f"invalid JSON: {exc}"


def _cut(size: int) -> bool:
    """Whether a rollouts file of ``size`` bytes is scanned in spans (when there is a pool)."""
    return size >= 2 * SCAN_SPAN_BYTES


def _lines(
    location: Location, size: int, listing: Mapping[str, FileEntry], shared: ListingFile | None, pool: Executor | None
) -> Iterator[tuple[int, ScannedLine]]:
    # ``size`` is where the scan stops: the file's listed size.
    """The file's non-blank lines in order, each with its line number in the file: scanned here
    as they are read, so the fan-out can start on the first rows, or, for a file worth cutting
    when there is an attempt pool, in spans its workers scan (reading ``shared``), a few at once:
    parsing every row is discovery's whole cost (a second per 400 MB)."""
    if pool is None or shared is None or not _cut(size):
        for count, offset, raw in location.iter_lines(0, size):
            if raw.strip():
                yield count, _scan_line(count, offset, raw, listing)
        return
    starts = range(0, size, SCAN_SPAN_BYTES)
    pending: deque[Future[ScannedSpan]] = deque()
    base = 0  # lines before the span

    def scanned(span: ScannedSpan) -> Iterator[tuple[int, ScannedLine]]:
        nonlocal base
        for row in span.rows:
            yield base + row.line, row
        base += span.lines

    try:
        for start in starts:
            if len(pending) >= SCAN_SPANS_IN_FLIGHT:
                yield from scanned(pending.popleft().result())
            end = size if start == starts[-1] else start + SCAN_SPAN_BYTES  # the last span reads to the end, as one scan would
            pending.append(pool.submit(scan_span, location, shared, start, end))
        while pending:
            yield from scanned(pending.popleft().result())
    finally:
        for future in pending:  # a failed span (the scan is made again or the run fails): the pool is not kept busy
            future.cancel()


def _scan(
    plan: JobPlan,
    sources: list[tuple[int | None, str, Location, int]],
    captures: list[FileEntry],
    accounts: list[ShardAccount],
    rows: Counter[tuple[int | None, str]],
    pool: Executor | None,
    keep: Callable[[AttemptRef], bool] | None = None,
) -> Iterator[AttemptRef]:
    """One attempt per JSON-object row, with the capture it claims, yielded once in ``plan``; then
    the orphan captures. Counts the rows per (shard, source) into ``rows``.

    Each row is also told to its shard's account (landed, or a sidecar row).

    Output lines number on across shards: the enriched outputs are the shards' rows in order.
    """
    listing = {entry.name: entry for entry in captures}
    claimed: set[str] = set()
    out_lines = dict.fromkeys((MAIN, FAILURES), 0)
    spanned = pool is not None and any(_cut(size) for *_, size in sources)
    with _listing_file(listing) if spanned else nullcontext(None) as shared:
        for shard, source, location, size in sources:
            shard_name = location.name if shard is not None else None
            for line_no, scanned in _lines(location, size, listing, shared, pool):
                if scanned.skipped is not None:
                    plan.skipped.append(SkippedLine(source, line_no, scanned.skipped, shard_name))
                    continue
                rows[(shard, source)] += 1
                if scanned.rollout_id is not None:
                    claimed.add(scanned.rollout_id)
                attempt = attempt_ref(scanned, source, line_no, out_lines[source] + 1, shard)
                if keep is not None and not keep(attempt):
                    continue  # a subset run's outputs hold the chosen rows only, numbered on without the others
                out_lines[source] += 1
                if source == MAIN:
                    accounts[shard or 0].land(scanned.accounted)
                else:
                    accounts[shard or 0].fail(scanned.accounted)
                plan.attempts.add(attempt)
                yield attempt
    plan.orphans = orphans(listing, claimed)


def _capture_id_of_file(name: str) -> str | None:
    for suffix in (CAPTURE_SUFFIX, MARKER_SUFFIX):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return None
