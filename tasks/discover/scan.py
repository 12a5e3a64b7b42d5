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
import heapq
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, replace
from typing import Any

import orjson

from evidence import CAPTURE_SUFFIX, MARKER_SUFFIX, PART_VERSION, ShardAccount, accounted_fields, capture_file_id, run_accounting
from tasks.storage.concurrent import at_once
from tasks.inputs.shards import Shard, is_remote
from tasks.storage.spill import Spill, TemporaryStore
from tasks.storage import FileEntry, InputNotFound, Location

# A rollouts file at least twice this long is scanned in spans of this size by the attempt pool,
# this many at a time (what the flow holds of the file's rows: their scanned lines, no bytes).
SCAN_SPAN_BYTES = 32 * 2**20
SCAN_SPANS_IN_FLIGHT = 4

MAIN = "main"
FAILURES = "failures"


@dataclass(frozen=True, slots=True)
class AttemptRef:
    """One input row: where its bytes are, which capture it owns, and what it was when seen."""

    source: str
    line: int
    offset: int
    length: int
    out_line: int
    rollout_id: str | None
    capture: FileEntry | None
    incomplete: bool
    fingerprint: str
    shard: int | None = None  # position of its rollouts file in a sharded job; None in a one-file job

    @property
    def key(self) -> str:
        return f"{self.source}:{self.line}" if self.shard is None else f"{self.shard}:{self.source}:{self.line}"

    @property
    def part_folder(self) -> str:
        """Its folder under ``attempts/``: the source, below the shard's folder in a sharded job."""
        return self.source if self.shard is None else f"shard-{self.shard:04d}/{self.source}"


@dataclass(frozen=True, slots=True)
class SkippedLine:
    """A non-blank input line that is not a JSON object: it cannot become a row."""

    source: str
    line: int
    reason: str
    shard: str | None = None  # the shard's file name in a sharded job


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
        self.seconds = 0.0

    def select(self, keep: Callable[[AttemptRef], bool]) -> None:
        """Keep only the attempts ``keep`` accepts (a subset run), in input order."""
        chosen: Spill[AttemptRef] = Spill()
        for attempt in self.attempts:
            if keep(attempt):
                chosen.add(attempt)
        self.attempts.close()
        self.attempts = chosen

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


def check_inputs(shards: Sequence[Shard], capture_dir: Location) -> None:
    """Raise ``InputNotFound`` for a missing rollouts file, failures sidecar or capture directory.

    A run over a typo would otherwise report every attempt as ``no_records`` (or fail in
    discovery, after its run directory was claimed).
    """
    checks: list[tuple[Location, str, Callable[[], bool]]] = []
    for shard in shards:
        checks.append((shard.main, "rollouts file not found", shard.main.is_file))
        if shard.failures is not None:  # an explicit --failures
            checks.append((shard.failures, "failures sidecar not found", shard.failures.is_file))
    checks.append((capture_dir, "capture directory not found", capture_dir.is_dir))
    found = at_once([functools.partial(_outcome, check) for _, _, check in checks], remote=is_remote([location for location, _, _ in checks]))
    for (location, problem, _), outcome in zip(checks, found, strict=True):  # the first to fail, in order, says why
        if isinstance(outcome, Exception):
            raise outcome
        if not outcome:
            raise InputNotFound(location.url, problem)


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
    return JobInputs(files, capture_dir.name, _capture_entries(capture_dir))


def _capture_entries(capture_dir: Location) -> list[FileEntry]:
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
    return _fingerprint(inputs.items())


def _fingerprint(items: Iterable[tuple[str, FileEntry]]) -> str:
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


def _shard_summaries(shards: Sequence[Shard], inputs: JobInputs, rows: Counter[tuple[int | None, str]], sharded: bool) -> list[dict[str, Any]]:
    """What the manifest says of each rollouts file: its sidecars, rows per source, and a fingerprint of its files."""
    summaries = []
    for k, shard in enumerate(shards):
        files = sorted(loc.name for loc in (shard.main, shard.failures, shard.materialized) if loc is not None)
        index = k if sharded else None
        summaries.append({
            "file": shard.name,
            "rollouts": shard.main.url,
            "failures": shard.failures.url if shard.failures is not None else None,
            "materialized_inputs": shard.materialized.url if shard.materialized is not None else None,
            "rows": {MAIN: rows[(index, MAIN)], FAILURES: rows[(index, FAILURES)]},
            "fingerprint": _fingerprint((name, inputs.files[name]) for name in files),
        })
    return summaries


def discover(shards: Sequence[Shard], capture_dir: Location, pool: Executor | None = None) -> JobPlan:
    """Scan the rollouts file(s) once and the capture directory once; return the job plan.

    With ``pool`` (the attempt pool, idle until the fan-out), spans of a long rollouts file are
    scanned by its workers at once.
    """
    started = time.perf_counter()
    inputs = list_inputs(shards, capture_dir)
    plan = JobPlan()
    sharded = len(shards) > 1
    sources = [
        (k if sharded else None, source, location, inputs.files[location.name].size)
        for source in (MAIN, FAILURES)
        for k, shard in enumerate(shards)
        if (location := shard.main if source == MAIN else shard.failures) is not None
    ]
    accounts = [ShardAccount(shard.name, shard.materialized is not None) for shard in shards]
    try:
        rows = _scan(plan, sources, inputs.captures, accounts, pool)
        for shard, account in zip(shards, accounts, strict=True):
            if shard.materialized is not None:
                _read_inventory(shard.materialized, account)
        plan.accounting = run_accounting(accounts)
        plan.fingerprint = fingerprint_inputs(inputs)
        plan.shards = _shard_summaries(shards, inputs, rows, sharded)
        for rel, entry in inputs.items():
            plan.inputs.add((shown_name(rel), replace(entry, name=shown_name(entry.name))))
    except BaseException:
        plan.close()
        raise
    plan.seconds = time.perf_counter() - started
    return plan


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


def scan_span(location: Location, listing: dict[str, FileEntry], start: int = 0, end: int | None = None) -> ScannedSpan:
    """Parse every line starting in ``[start, end)`` once; runs in the flow or in an attempt worker."""
    rows, lines = [], 0
    for lines, offset, raw in location.iter_lines(start, end):
        if raw.strip():
            rows.append(_scan_line(lines, offset, raw, listing))
    return ScannedSpan(lines, rows)


def _scan_line(line: int, offset: int, raw: bytes, listing: dict[str, FileEntry]) -> ScannedLine:
    try:
        row = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return ScannedLine(line, offset, len(raw), f"invalid JSON: {exc}", {}, None, None, False, "")
    if not isinstance(row, dict):
        return ScannedLine(line, offset, len(raw), f"not a JSON object: {type(row).__name__}", {}, None, None, False, "")
    rollout_id = capture_file_id(row)
    capture = listing.get(rollout_id + CAPTURE_SUFFIX) if rollout_id is not None else None
    incomplete = rollout_id is not None and (rollout_id + MARKER_SUFFIX) in listing
    fingerprint = _attempt_fingerprint(raw, capture, incomplete)
    return ScannedLine(line, offset, len(raw), None, accounted_fields(row), rollout_id, capture, incomplete, fingerprint)


def _spans(location: Location, size: int, listing: dict[str, FileEntry], pool: Executor | None) -> Iterator[ScannedSpan]:
    """The file's spans in order: scanned by the attempt pool's workers when there is one and
    the file is worth cutting, else here. Parsing every row is discovery's whole cost (a second
    per 400 MB), and the pool's workers are idle until the fan-out starts."""
    if pool is None or size < 2 * SCAN_SPAN_BYTES:
        yield scan_span(location, listing)
        return
    starts = range(0, size, SCAN_SPAN_BYTES)
    pending: deque[Future[ScannedSpan]] = deque()
    try:
        for start in starts:
            if len(pending) >= SCAN_SPANS_IN_FLIGHT:
                yield pending.popleft().result()
            end = None if start == starts[-1] else start + SCAN_SPAN_BYTES  # the last span reads to the end, as one scan would
            pending.append(pool.submit(scan_span, location, listing, start, end))
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:  # a failed span (Prefect retries discovery): the pool is not kept busy
            future.cancel()


def _scan(
    plan: JobPlan,
    sources: list[tuple[int | None, str, Location, int]],
    captures: list[FileEntry],
    accounts: list[ShardAccount],
    pool: Executor | None,
) -> Counter[tuple[int | None, str]]:
    """One attempt per JSON-object row, with the capture it claims; then the orphan captures; rows per (shard, source).

    Each row is also told to its shard's account (landed, or a sidecar row).

    Output lines number on across shards: the enriched outputs are the shards' rows in order.
    """
    listing = {entry.name: entry for entry in captures}
    claimed: set[str] = set()
    out_lines = dict.fromkeys((MAIN, FAILURES), 0)
    rows: Counter[tuple[int | None, str]] = Counter()
    for shard, source, location, size in sources:
        shard_name = location.name if shard is not None else None
        base = 0  # lines before the span
        for span in _spans(location, size, listing, pool):
            for scanned in span.rows:
                line_no = base + scanned.line
                if scanned.skipped is not None:
                    plan.skipped.append(SkippedLine(source, line_no, scanned.skipped, shard_name))
                    continue
                out_lines[source] += 1
                rows[(shard, source)] += 1
                if source == MAIN:
                    accounts[shard or 0].land(scanned.accounted)
                else:
                    accounts[shard or 0].fail(scanned.accounted)
                if scanned.rollout_id is not None:
                    claimed.add(scanned.rollout_id)
                plan.attempts.add(
                    AttemptRef(
                        source=source,
                        line=line_no,
                        offset=scanned.offset,
                        length=scanned.length,
                        out_line=out_lines[source],
                        rollout_id=scanned.rollout_id,
                        capture=scanned.capture,
                        incomplete=scanned.incomplete,
                        fingerprint=scanned.fingerprint,
                        shard=shard,
                    )
                )
            base += span.lines
    plan.orphans = sorted(
        shown_name(name) for name in listing if _capture_id_of_file(name) is not None and _capture_id_of_file(name) not in claimed
    )
    return rows


def _capture_id_of_file(name: str) -> str | None:
    for suffix in (CAPTURE_SUFFIX, MARKER_SUFFIX):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return None
