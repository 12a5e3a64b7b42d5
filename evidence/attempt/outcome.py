"""The typed result of one attempt: what the run's folds and the manifest need, nothing else.

An outcome is made once, in the worker, by :func:`evidence.attempt.process_attempt`, encoded as
the attempt's part (:mod:`evidence.attempt.part`) and read back by the reduce. Every field a
reader needs is named here, so no module reconstructs the protocol from dict keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from evidence.atif.digest import AtifFile, AtifRefusal
from evidence.folds.digest import ScoreDigest
from evidence.health import RowDigest
from evidence.tables import RowFacts

__all__ = ["AtifFile", "AtifRefusal", "AttemptOutcome", "MainDigests", "PerfDigest", "Status"]


class Status(StrEnum):
    """How an attempt ended."""

    OK = "ok"
    """Collected; the enriched row is written."""
    REJECTED = "rejected"
    """0.7.0 raises on this row; the row is written unchanged, the reason is 0.7.0's error."""
    FAILED = "failed"
    """Our own code met something it could not handle; the reason names the exception."""


@dataclass(frozen=True, slots=True)
class PerfDigest:
    """A main row's perf_summary group and the numbers of its ``ng_perf`` the summary reads.

    ``record`` is None when the row has no ``ng_perf`` object (it still counts as a rollout).
    """

    group: str
    record: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class MainDigests:
    """What the run's folds read about one main row. A digest that could not be computed is None
    (the attempt is then ``failed`` and the fold counts the row as unavailable)."""

    health: RowDigest | None
    capability: dict[str, Any] | None
    perf: PerfDigest | None
    atif: AtifFile | AtifRefusal
    score: ScoreDigest | None = None  # None also for a row in no group (no server, no agent)
    view: bytes | None = None  # what the rollout viewer shows of the row: ``ViewFacts.encode()``, decoded by the reduce's last pass


@dataclass(frozen=True, slots=True)
class AttemptOutcome:
    """One attempt, processed.

    Attributes:
        status: ok, rejected or failed (see :class:`Status`).
        reason: why the attempt is rejected or failed; None when ok.
        notes: what the manifest says about an ok row: no capture id, its capture gap codes.
        repaired: the input said ``model_call_capture_no_records`` and the rebuilt capture has calls.
        rollout_id: the capture rollout id the row names (None when it has none or an invalid one).
        line: the output row line, without newline: the enriched row, or the input row unchanged
            (bytes from the engine; a view of the part's bytes once decoded, see ``decode_part``).
        main: the digests of a main row; None for a sidecar row.
        facts: what the analysis tables read from the row (None when reading it failed).
    """

    status: Status
    reason: str | None
    notes: tuple[str, ...]
    repaired: bool
    rollout_id: str | None
    line: bytes | memoryview
    main: MainDigests | None
    facts: RowFacts | None = None
