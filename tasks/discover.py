"""Discovery: a job's inputs -> one attempt per row, each with its capture file and fingerprint.

The attempt key is ``(source, line)``; the rollout id is evidence that can repeat or be invalid,
so it never names a file here. Capture files claimed by no row are orphans: reported, never read.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

import orjson

from evidence import RowRejected, capture_rollout_id, check_capture_file_id
from tasks.storage import FileEntry, InputNotFound, Location

JSONL_SUFFIX = ".capture.jsonl"
MARKER_SUFFIX = ".capture.incomplete"
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

    @property
    def key(self) -> str:
        return f"{self.source}:{self.line}"


@dataclass(frozen=True, slots=True)
class SkippedLine:
    """A non-blank input line that is not a JSON object: it cannot become a row."""

    source: str
    line: int
    reason: str


@dataclass(slots=True)
class JobPlan:
    """Everything discovery learned about a job; small per attempt."""

    attempts: list[AttemptRef] = field(default_factory=list)
    skipped: list[SkippedLine] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    inputs: dict[str, FileEntry] = field(default_factory=dict)
    fingerprint: str = ""
    seconds: float = 0.0

    def of_source(self, source: str) -> list[AttemptRef]:
        return [a for a in self.attempts if a.source == source]


def capture_id_of(row: dict) -> str | None:
    """The capture file id 0.7.0 would look up for this row, or None when it has none or an invalid one."""
    try:
        rollout_id = capture_rollout_id(row)
        if rollout_id is not None:
            check_capture_file_id(rollout_id)
    except (RowRejected, ValueError, TypeError):
        return None
    return rollout_id


def _attempt_fingerprint(line: bytes, capture: FileEntry | None, incomplete: bool) -> str:
    digest = hashlib.sha256(line)
    digest.update(f"\0{capture.size if capture else -1}\0{capture.version if capture else ''}\0{int(incomplete)}".encode())
    return digest.hexdigest()


def check_inputs(main: Location, capture_dir: Location) -> None:
    """Raise ``InputNotFound`` for a missing rollouts file or capture directory.

    A run over a typo would otherwise report every attempt as ``no_records``.
    """
    if not main.exists():
        raise InputNotFound(main.url, "rollouts file not found")
    if not capture_dir.is_dir():
        raise InputNotFound(capture_dir.url, "capture directory not found")


def list_inputs(main: Location, failures: Location | None, capture_dir: Location) -> dict[str, FileEntry]:
    """Every input file (relative name -> size/version), from one HEAD per file and one LIST."""
    check_inputs(main, capture_dir)
    inputs = {main.name: main.entry()}
    if failures is not None:
        inputs[failures.name] = failures.entry()
    for entry in capture_dir.list_files():
        inputs[f"{capture_dir.name}/{entry.name}"] = entry
    return inputs


def fingerprint_inputs(inputs: dict[str, FileEntry]) -> str:
    """The job fingerprint: sha256 over the sorted (relative path, size, version) of every input."""
    digest = hashlib.sha256()
    for rel in sorted(inputs):
        entry = inputs[rel]
        digest.update(f"{rel}\0{entry.size}\0{entry.version}\n".encode())
    return digest.hexdigest()


def discover(main: Location, failures: Location | None, capture_dir: Location) -> JobPlan:
    """Scan the rollouts file(s) once and the capture directory once; return the job plan."""
    started = time.perf_counter()
    plan = JobPlan(inputs=list_inputs(main, failures, capture_dir))
    prefix = capture_dir.name + "/"
    listing = {rel[len(prefix) :]: entry for rel, entry in plan.inputs.items() if rel.startswith(prefix)}
    claimed: set[str] = set()
    sources = [(MAIN, main)] + ([(FAILURES, failures)] if failures is not None else [])
    for source, location in sources:
        out_line = 0
        for line_no, offset, raw in location.iter_lines():
            if not raw.strip():
                continue
            try:
                row = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                plan.skipped.append(SkippedLine(source, line_no, f"invalid JSON: {exc}"))
                continue
            if not isinstance(row, dict):
                plan.skipped.append(SkippedLine(source, line_no, f"not a JSON object: {type(row).__name__}"))
                continue
            out_line += 1
            rollout_id = capture_id_of(row)
            capture = incomplete = None
            if rollout_id is not None:
                claimed.add(rollout_id)
                capture = listing.get(rollout_id + JSONL_SUFFIX)
                incomplete = (rollout_id + MARKER_SUFFIX) in listing
            plan.attempts.append(
                AttemptRef(
                    source=source,
                    line=line_no,
                    offset=offset,
                    length=len(raw),
                    out_line=out_line,
                    rollout_id=rollout_id,
                    capture=capture,
                    incomplete=bool(incomplete),
                    fingerprint=_attempt_fingerprint(raw, capture, bool(incomplete)),
                )
            )
    plan.orphans = sorted(
        name for name in listing if _capture_id_of_file(name) is not None and _capture_id_of_file(name) not in claimed
    )
    plan.fingerprint = fingerprint_inputs(plan.inputs)
    plan.seconds = time.perf_counter() - started
    return plan


def _capture_id_of_file(name: str) -> str | None:
    for suffix in (JSONL_SUFFIX, MARKER_SUFFIX):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return None
