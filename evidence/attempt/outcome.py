"""The typed result of one attempt: what the run's folds and the manifest need, nothing else.

An outcome is made once, in the worker, by :func:`evidence.attempt.process_attempt`, encoded as
the attempt's part (:mod:`evidence.attempt.part`) and read back by the reduce. Every field a
reader needs is named here, so no module reconstructs the protocol from dict keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from evidence.atif.encode import FINAL_NEWLINE
from evidence.folds.digest import ScoreDigest
from evidence.health import RowDigest

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


@dataclass(frozen=True, slots=True, eq=False)
class AtifFile:
    """A main row converted to an ATIF v1.7 file (accepted unless an earlier row has its key).

    ``text`` is the file without its final newline, in pieces (one per step from the engine,
    one once decoded from a part); ``chunks`` adds the newline. ``agent`` is the row's agent
    label where it is a string (an all-or-nothing export needs exactly one across its files).
    """

    key: tuple[int, int]
    name: str
    text: tuple[bytes, ...]
    manifest_line: bytes
    agent: str | None

    def chunks(self) -> tuple[bytes, ...]:
        """The file's bytes, in pieces."""
        return (*self.text, FINAL_NEWLINE)

    @property
    def size(self) -> int:
        return sum(map(len, self.chunks()))

    def __eq__(self, other: object) -> bool:
        """The same file: equal whatever the cut of its pieces."""
        if not isinstance(other, AtifFile):
            return NotImplemented
        mine, theirs = (self.key, self.name, self.manifest_line, self.agent), (other.key, other.name, other.manifest_line, other.agent)
        return mine == theirs and b"".join(self.text) == b"".join(other.text)

    def __hash__(self) -> int:
        """Consistent with ``==``: the pieces are hashed joined."""
        return hash((self.key, self.name, self.manifest_line, self.agent, b"".join(self.text)))


@dataclass(frozen=True, slots=True)
class AtifRefusal:
    """A main row the strict ATIF export refuses; ``message`` is 0.7.0's per-row text.

    ``key`` is the row's ``row_key`` (its ``(task, rollout)``, or the index field the batch
    refuses first), None when the line does not decode: an all-or-nothing export replays the
    batch's checks, which come before the conversion and register the key of a refused row.
    """

    message: str
    key: tuple[int, int] | str | None = None


@dataclass(frozen=True, slots=True)
class MainDigests:
    """What the run's folds read about one main row. A digest that could not be computed is None
    (the attempt is then ``failed`` and the fold counts the row as unavailable)."""

    health: RowDigest | None
    capability: dict[str, Any] | None
    perf: PerfDigest | None
    atif: AtifFile | AtifRefusal
    score: ScoreDigest | None = None  # None also for a row in no group (no server, no agent)


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
    """

    status: Status
    reason: str | None
    notes: tuple[str, ...]
    repaired: bool
    rollout_id: str | None
    line: bytes | memoryview
    main: MainDigests | None
