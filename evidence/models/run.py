"""The run contract: what one run records about itself in ``params.json`` and ``manifest.json``.

Every stage of the flow hands the run's facts on as these values, not as dicts: the flow
resolves ``RecordedParams``, the reduce counts ``RunCounts``, publishing writes a
``RunManifest``, and every reader of a finished run (report, export, compare, ``tables``,
batch freshness, LATEST) parses ``FinishedRun``. The documents keep their byte layout (FORMATS.md, "manifest.json"): the
manifest's two long lists are ``Streamed`` and written while they are produced, so a
20,000-attempt manifest is never in memory at once.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict

__all__ = [
    "DEFAULT_SCORE_MASK",
    "OUTPUT_PARAMETERS",
    "SCORE_MASKS",
    "AttemptEntry",
    "FinishedRun",
    "ManifestAttempts",
    "ManifestHead",
    "RecordedParams",
    "RunCounts",
    "RunIdentity",
    "RunManifest",
    "ShardEntry",
    "Streamed",
    "manifest_chunks",
]

# Parameters whose change changes outputs: they make the run's config fingerprint and must
# match when a run is resumed.
OUTPUT_PARAMETERS = ("session_id", "agent_version", "ignored_checks", "atif_all_or_nothing")

_INDENT = orjson.OPT_INDENT_2

SCORE_MASKS: dict[str, tuple[str, ...]] = {
    "unhealthy": ("unhealthy",),
    "unhealthy,unobserved": ("unhealthy", "unobserved"),
    "none": (),
}
"""``score_mask`` -> the health verdicts whose rollouts the clean scores mask."""
DEFAULT_SCORE_MASK = "unhealthy"


class RecordedParams(BaseModel):
    """A run's ``params.json``: what it was asked to do, fixed when the run id is claimed.

    A resume reads it back and wins over the caller (explicit conflicting values are refused).
    ``gate`` holds the set limits only, and is absent from the file of an ungated run.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    rollouts: str | list[str]
    capture_dir: str
    failures: str | None
    job_id: str
    session_id: str
    agent_version: str
    ignored_checks: list[str]
    atif_all_or_nothing: bool
    rollout_ids: list[str]
    rollout_glob: str | None
    gate: dict[str, Any] | None = None
    score_mask: str = DEFAULT_SCORE_MASK  # recorded when not the default, so older runs read the same

    @property
    def masked_verdicts(self) -> tuple[str, ...]:
        """The verdicts whose rollouts ``aggregate_metrics_clean.json`` masks."""
        return SCORE_MASKS[self.score_mask]

    @property
    def is_subset(self) -> bool:
        """Whether the run selects a subset of the job's attempts (a rerun by rollout id or glob)."""
        return bool(self.rollout_ids) or self.rollout_glob is not None

    def to_json(self) -> dict[str, Any]:
        """The document as ``params.json`` and the manifest's ``parameters`` hold it."""
        document = self.model_dump(exclude={"gate", "score_mask"})
        if self.gate:
            document["gate"] = self.gate
        if self.score_mask != DEFAULT_SCORE_MASK:
            document["score_mask"] = self.score_mask
        return document

    def config_fingerprint(self) -> str:
        """sha256 of the output-changing parameters.

        A gate changes what the run publishes (``gate.json``, whether it becomes LATEST), and a
        score mask what the clean scores are, so each is part of the fingerprint when set; a run
        with neither has the fingerprint it always had.
        """
        chosen: dict[str, Any] = {name: getattr(self, name) for name in OUTPUT_PARAMETERS}
        if self.gate:
            chosen["gate"] = self.gate
        if self.score_mask != DEFAULT_SCORE_MASK:
            chosen["score_mask"] = self.score_mask
        return hashlib.sha256(orjson.dumps(chosen, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass(frozen=True, slots=True)
class RunIdentity:
    """The manifest's ``run`` section: identity, scope and times of one run."""

    run_id: str
    job_id: str
    run_dir: str
    scope: str  # "full" or "subset"
    package_version: str
    started_at: str  # ISO 8601, UTC; a resumed run's: when it was claimed
    finished_at: str
    resumed: bool
    resumed_at: str | None = None  # when the last resume started (absent from the manifest of a run never resumed)


@dataclass(frozen=True, slots=True)
class RunCounts:
    """The manifest's ``counts``: what the run processed and produced (also the CLI's summary)."""

    attempts: int
    by_status: dict[str, int]
    rows: dict[str, int]
    skipped_lines: int
    orphans: int
    repairs: int
    atif_files: int
    atif_rejections: int
    verdicts: dict[str, int]
    fold_problems: int

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Streamed:
    """A manifest value produced while it is written: a list of items, or a mapping of (key, value) pairs.

    ``items`` is called each time the manifest is written (a retried write starts over).
    """

    def __init__(self, items: Callable[[], Iterable[Any]], *, pairs: bool = False) -> None:
        self.items = items
        self.pairs = pairs


@dataclass(frozen=True)
class RunManifest:
    """``manifest.json``: the one output that carries the run id and times (every other output
    is byte-identical across reruns of the same inputs and parameters)."""

    run: RunIdentity
    parameters: RecordedParams
    inputs_fingerprint: str
    input_files: Streamed  # (relative name, {size, ...}) pairs
    shards: list[dict[str, Any]]
    accounting: dict[str, Any]
    counts: RunCounts
    attempts: Streamed  # one entry per attempt, input order
    skipped_lines: list[dict[str, Any]]
    orphans: list[str]
    fold_problems: list[str]
    timings: dict[str, float] = field(default_factory=dict)
    gate: dict[str, Any] | None = None  # gate.json's document when the run was gated

    @property
    def gate_passed(self) -> bool:
        """Whether the run may become LATEST: ungated, or its gate passed."""
        return self.gate is None or bool(self.gate["passed"])

    def with_timing(self, name: str, seconds: float) -> RunManifest:
        return dataclasses.replace(self, timings={**self.timings, name: round(seconds, 3)})

    def document(self) -> dict[str, Any]:
        """The manifest as ``manifest_chunks`` writes it, keys in their documented order."""
        document: dict[str, Any] = {
            "run": {k: v for k, v in dataclasses.asdict(self.run).items() if k != "resumed_at" or v is not None},
            "parameters": self.parameters.to_json(),
            "config_fingerprint": self.parameters.config_fingerprint(),
            "inputs": {"fingerprint": self.inputs_fingerprint, "files": self.input_files},
            "shards": self.shards,
            "accounting": self.accounting,
            "counts": self.counts.to_json(),
            "attempts": self.attempts,
            "skipped_lines": self.skipped_lines,
            "orphans": self.orphans,
            "fold_problems": self.fold_problems,
            "timings": self.timings,
        }
        if self.gate is not None:
            document["gate"] = self.gate
        return document

    def finished(self) -> FinishedRun:
        """The typed view a reader of the written manifest gets (the report renders from it at the end of a run)."""
        return FinishedRun(
            run=self.run,
            shards=[ShardEntry.model_validate(shard) for shard in self.shards],
            parameters=self.parameters,
            config_fingerprint=self.parameters.config_fingerprint(),
            inputs=FinishedRun.Inputs(fingerprint=self.inputs_fingerprint),
            counts=self.counts,
        )

    def json_chunks(self) -> Iterator[bytes]:
        """``manifest.json``'s bytes: ``orjson``'s 2-space indentation of ``document()``, streamed."""
        return manifest_chunks(self.document())


class ShardEntry(BaseModel):
    """One rollouts file as the manifest's ``shards`` names it, with the sidecars the run read beside it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    file: str
    failures: str | None = None
    materialized_inputs: str | None = None


class ManifestHead(BaseModel):
    """The manifest's ``run`` and ``shards``: what a reader streaming the attempt entries needs first
    (both precede ``attempts``; ``tables`` reads no further before the entries)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    run: RunIdentity
    shards: list[ShardEntry]


class FinishedRun(ManifestHead):
    """A finished run as its ``manifest.json`` records it: the one typed view every reader of a
    finished run (report, export, compare, ``tables``, LATEST, resume) takes, so none indexes the
    document by string. The attempt entries are left out: readers that need them stream them."""

    class Inputs(BaseModel):
        model_config = ConfigDict(frozen=True, extra="ignore")

        fingerprint: str

    parameters: RecordedParams
    config_fingerprint: str
    inputs: Inputs
    counts: RunCounts


class AttemptEntry(BaseModel):
    """One of the manifest's ``attempts`` (FORMATS.md, "manifest.json"): which input line it was,
    which enriched output holds its row, and how it ended."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    key: str  # "<source>:<line>", or "<shard>:<source>:<line>" in a sharded job
    line: int
    source: str  # "main" or "failures"
    status: str
    rollout_id: str | None = None
    reason: str | None = None
    repaired: bool = False
    notes: tuple[str, ...] = ()

    @property
    def shard(self) -> int:
        """The index of the rollouts file the attempt came from (0 in a job of one file)."""
        parts = self.key.split(":")
        return int(parts[0]) if len(parts) == 3 and parts[0].isdigit() else 0


class ManifestAttempts(BaseModel):
    """The manifest's attempt entries, in input order (read only by the exporters, which need every main one)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    attempts: list[AttemptEntry]


def manifest_chunks(document: dict[str, Any]) -> Iterator[bytes]:
    """``document`` as ``orjson.dumps(..., OPT_INDENT_2) + b"\\n"``, with ``Streamed`` values expanded in place."""
    yield from _chunks(document, 0)
    yield b"\n"


def _chunks(value: Any, level: int) -> Iterator[bytes]:
    if isinstance(value, Streamed):
        items = value.items() if value.pairs else ((None, item) for item in value.items())
        yield from _container(items, level, b"{}" if value.pairs else b"[]")
    elif isinstance(value, dict) and any(isinstance(v, (Streamed, dict)) for v in value.values()):
        yield from _container(value.items(), level, b"{}")
    else:
        yield orjson.dumps(value, option=_INDENT).replace(b"\n", b"\n" + b"  " * level)


def _container(items: Iterable[tuple[str | None, Any]], level: int, brackets: bytes) -> Iterator[bytes]:
    """Items one per line at ``level + 1``; an empty container stays ``{}`` / ``[]`` as orjson writes it."""
    pad = b"\n" + b"  " * (level + 1)
    separator = brackets[:1]
    for key, item in items:
        yield separator + pad
        if key is not None:
            yield orjson.dumps(key) + b": "
        yield from _chunks(item, level + 1)
        separator = b","
    yield brackets if separator == brackets[:1] else b"\n" + b"  " * level + brackets[1:]
