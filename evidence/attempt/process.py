"""The attempt engine: one input row (bytes) and its capture files to one typed outcome.

The sequence is 0.7.0's per-row collection (:func:`evidence.collect.collect_row`), the writing
of the output line, then, for a main row, the digests the run's folds need: rollout-level
health, the capability digest, the perf group and record, and the ATIF conversion. All digests
read one value: the written line as a reader of ``rollouts.jsonl`` decodes it (non-finite
floats are null there), as 0.7.0's health check and exporter see the file. For a short row that
reads back as itself (:meth:`~evidence.collect.CollectedRow.decodes_to_itself`) that value is the
enriched row, and the line is not parsed again.

Memory: a long unicode row is several times larger as objects than as bytes, so the engine
keeps no more than one copy of anything alive at a time. It takes its inputs over
(:class:`AttemptInputs`), frees the capture bytes once they are parsed, writes a long enriched
row in pieces that are freed as they are written and decodes it back piece by piece
(:func:`evidence.jsonl.write_row`), frees the row bytes once the line exists and the decoded row
before the ATIF file is encoded.

No exception leaves an attempt. 0.7.0's own refusals become ``rejected`` (the row is written
unchanged); anything else our code cannot handle becomes ``failed`` with the exception's type
and message: a collection failure writes the row unchanged, a digest failure keeps the
enriched row and marks only that digest unavailable. The reduce counts such rows; the manifest
lists them with their reasons.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import orjson

from evidence.atif.convert import AtifIdentity
from evidence.atif.digest import AtifFile, AtifRefusal, atif_of_line, convert_row, encode_converted
from evidence.attempt.outcome import AttemptOutcome, MainDigests, PerfDigest, Status
from evidence.capabilities import capability_digest
from evidence.capture import CaptureFiles
from evidence.collect import CollectedRow, collect_row
from evidence.errors import failure_reason
from evidence.folds.digest import score_digest
from evidence.health import evaluate_row, unreadable_row
from evidence.identity import capture_file_id
from evidence.jsonl import WrittenRow, write_row
from evidence.models.atif import Exporter
from evidence.perf_summary import perf_group, summary_input
from evidence.tables import RowFacts, row_facts
from evidence.viewer.rollout import decode_row, view_facts

__all__ = ["AttemptConfig", "AttemptInputs", "process_attempt", "unprocessed_attempt"]

NO_CAPTURE_ID = "no capture rollout id: capture not collected"

LONG_INPUTS_BYTES = 4 * 2**20
"""Inputs (row and capture) from this size on are written and decoded in pieces; below it the
copies a whole-row write and decoding hold are small against the memory bound's 150 MB, and
one orjson call per row is faster than a hundred."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class AttemptConfig:
    """The run's output-changing parameters an attempt needs (small, picklable).

    Attributes:
        session_id, agent_version, exporter: the ATIF identity of the run.
        ignored_checks: normalised health check ids to skip.
        verdict_source: the rollouts file as health findings quote it (``source_file``).
    """

    session_id: str
    agent_version: str
    exporter: Exporter
    ignored_checks: tuple[str, ...]
    verdict_source: str


class AttemptInputs:
    """One attempt's input row and capture files, handed over to :func:`process_attempt`.

    The engine frees each input as soon as it no longer needs it, which it can only do when
    nothing else refers to it: the caller puts its only references here (and keeps none), the
    engine takes them out. Taken, the holder is empty; ``size`` (the bytes handed over) remains:
    it decides whether the engine writes the row in pieces.
    """

    __slots__ = ("_capture", "_row", "size")

    def __init__(self, row: bytes, capture: CaptureFiles | None) -> None:
        """``row``: the input line (a JSON object, as discovery found it), without newline;
        ``capture``: the capture files of the rollout id the row names (None when neither exists)."""
        self._row: bytes | None = row
        self._capture = capture
        self.size = len(row) + (len(capture.jsonl) if capture is not None and capture.jsonl is not None else 0)

    def take_row(self) -> bytes:
        """The row; the holder forgets it.

        Raises:
            ValueError: already taken (an attempt's inputs are processed once).
        """
        row, self._row = self._row, None
        if row is None:
            raise ValueError("the attempt's row was already taken")
        return row

    def take_capture(self, rollout_id: str) -> CaptureFiles | None:  # noqa: ARG002 - a CaptureLookup; the holder has one row's capture
        """The capture files (a :data:`~evidence.capture.CaptureLookup` for the row's rollout
        id); the holder forgets them, so they are freed once parsed."""
        capture, self._capture = self._capture, None
        return capture


def process_attempt(inputs: AttemptInputs, config: AttemptConfig, *, main_line: int | None) -> AttemptOutcome:
    """Process one attempt, taking over its inputs; never raises for what the inputs hold.

    (Inputs already taken are a caller's error: ``AttemptInputs.take_row`` raises ``ValueError``.)

    Args:
        inputs: the row and its capture files, handed over (see :class:`AttemptInputs`).
        config: the run's parameters.
        main_line: for a main row, its 1-based line in the run's ``rollouts.jsonl`` (health
            locators and ordinals, ATIF rejections); None for a sidecar row (no digests).
    """
    row, long_inputs = inputs.take_row(), inputs.size >= LONG_INPUTS_BYTES
    try:
        value = orjson.loads(row)
        collected = collect_row(value, inputs.take_capture)
    except Exception as exc:  # noqa: BLE001 - no exception leaves an attempt
        return unprocessed_attempt(row, failure_reason(exc, "collection"), config, main_line=main_line)
    rollout_id = capture_file_id(value)
    del value  # the enriched row shares its members; writing it frees them only if nothing else holds them
    if collected.rejected is not None:
        reason = f"{collected.rejected.kind}: {collected.rejected.message}"
        return _outcome(
            Status.REJECTED, reason, (), False, rollout_id, WrittenRow(row, canonical=False), config=config, main_line=main_line
        )
    enriched, repaired, projected = collected.row, collected.repaired, collected.projected
    try:
        # A short row that reads back as itself feeds the digests directly; a long one is written
        # in pieces, which takes its members out as they are written.
        reads_as_itself = not long_inputs and main_line is not None and _decodes_to_itself(collected)
        del collected
        notes = _notes(enriched, rollout_id)
        written = write_row(enriched, in_pieces=long_inputs)
    except Exception as exc:  # noqa: BLE001 - an unwritable row is passed through unchanged
        return unprocessed_attempt(row, failure_reason(exc, "writing the row"), config, main_line=main_line)
    as_read = enriched if reads_as_itself and written.canonical else None
    del row, enriched
    return _outcome(
        Status.OK,
        None,
        notes,
        repaired,
        rollout_id,
        written,
        projected=projected and written.canonical,
        config=config,
        main_line=main_line,
        as_read=as_read,
    )


def _decodes_to_itself(collected: CollectedRow) -> bool:
    """The shortcut's check; a failure of it only means the line is parsed instead."""
    try:
        return collected.decodes_to_itself()
    except Exception:  # noqa: BLE001 - an optimisation never fails an attempt
        return False


def unprocessed_attempt(row: bytes, reason: str, config: AttemptConfig, *, main_line: int | None) -> AttemptOutcome:
    """A ``failed`` attempt whose row is written unchanged: the folds see it as 0.7.0 would.

    For a failure before or during collection, and for the caller's own (a capture file that
    vanished between discovery and reading).
    """
    try:
        rollout_id = capture_file_id(orjson.loads(row))
    except Exception:  # noqa: BLE001 - an unparsable row has no rollout id
        rollout_id = None
    return _outcome(Status.FAILED, reason, (), False, rollout_id, WrittenRow(row, canonical=False), config=config, main_line=main_line)


def _outcome(
    status: Status,
    reason: str | None,
    notes: tuple[str, ...],
    repaired: bool,
    rollout_id: str | None,
    written: WrittenRow,
    *,
    config: AttemptConfig,
    main_line: int | None,
    projected: bool = False,
    as_read: dict[str, Any] | None = None,
) -> AttemptOutcome:
    """``projected``: the line holds the projection's own trajectory dump, written by orjson.

    ``as_read``: the value a reader decodes from ``line``, when the caller has it already.
    """
    main = None
    failures: list[str] = []
    if main_line is not None:
        main, facts = _digests(written, projected, config, main_line, failures, as_read)
    else:  # a sidecar row: only its table rows
        facts = _guarded("table rows", partial(_sidecar_facts, written.line), failures)
    if failures:
        reason = "; ".join(failures if reason is None else [reason, *failures])
        status = Status.FAILED if status is Status.OK else status
    return AttemptOutcome(status, reason, notes, repaired, rollout_id, written.line, main, facts)


def _digests(
    written: WrittenRow,
    projected: bool,
    config: AttemptConfig,
    main_line: int,
    failures: list[str],
    as_read: dict[str, Any] | None,
) -> tuple[MainDigests, RowFacts | None]:
    """Every digest of a main row from one decoding of its written line; failures are collected.

    A trajectory the projection dumped and orjson wrote decodes to exactly that dump, which is
    canonical: health reads it without validating it again. Where the enriched row reads back
    as itself (``as_read``), it is that decoding: parsing the line again cost a third of the
    engine's time on realistic rows. The decoded row is dropped before the ATIF file is encoded:
    the document holds what the file needs of it, and a long row's decoded objects are several
    times its line.
    """

    identity = AtifIdentity(session_id=config.session_id, agent_version=config.agent_version, exporter=config.exporter)
    if as_read is not None:
        value = as_read
    else:
        try:
            value = written.value()
        except Exception as exc:  # noqa: BLE001 - a line orjson cannot read (a lone surrogate's escape)
            failures.append(failure_reason(exc, "decoding the written row"))
            # 0.7.0's health reads rollouts.jsonl with orjson and reports such a line as unreadable;
            # its exporter reads it with the strict loader, which may read it
            unreadable = unreadable_row(config.verdict_source, main_line, type(exc).__name__, ignored=config.ignored_checks)
            view = _guarded("viewer facts", partial(_unreadable_view, written.line), failures)
            return MainDigests(unreadable, None, None, _noted(atif_of_line(written.line, identity), failures), None, view), row_facts(None)
    # partial binds ``value`` where a lambda would close over it: ``del value`` below frees the
    # decoded row, and a closure over a deleted name reads as an undefined one
    health = _guarded(
        "health checks",
        partial(
            evaluate_row,
            value,
            source=config.verdict_source,
            line=main_line,
            ordinal=main_line - 1,
            ignored=config.ignored_checks,
            canonical_trajectory=projected,
        ),
        failures,
    )
    capability = _guarded("capability digest", partial(capability_digest, value), failures)
    perf = _guarded("perf digest", partial(_perf_digest, value), failures)
    score = _guarded("score digest", partial(score_digest, value), failures)
    facts = _guarded("table rows", partial(row_facts, value), failures)
    view = _guarded("viewer facts", partial(_view, written.line, value, facts), failures) if facts is not None else None
    if not written.canonical:  # an input row passed through, a fallback rendering: the strict loader reads it again
        del value
        return MainDigests(health, capability, perf, _noted(atif_of_line(written.line, identity), failures), score, view), facts
    # orjson's own line passes every rule of the strict loader and holds no lone surrogate, so
    # its orjson value is the strict one and the surrogate walk (hygiene) cannot fail.
    converted = convert_row(value, identity, hygiene=False)
    del value
    return MainDigests(health, capability, perf, _noted(encode_converted(converted), failures), score, view), facts


def _sidecar_facts(line: bytes) -> RowFacts:
    """A sidecar row's table facts, from its line as a reader of the sidecar decodes it."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        value = None
    return row_facts(value if isinstance(value, dict) else None)


def _view(line: bytes, row: dict[str, Any], facts: RowFacts) -> bytes:
    """The viewer's facts of a main row, encoded for its part."""
    return view_facts(line, row, facts).encode()


def _unreadable_view(line: bytes) -> bytes:
    """The viewer's facts of a main line orjson cannot read: what the page shows of it (``decode_row``)."""
    _, shown = decode_row(line)
    return view_facts(line, shown, row_facts(shown)).encode()


def _guarded(step: str, compute: Callable[[], T], failures: list[str]) -> T | None:
    """A digest, or None when computing it failed (the failure is added to ``failures``)."""
    try:
        return compute()
    except Exception as exc:  # noqa: BLE001 - a digest failure marks only that digest unavailable
        failures.append(failure_reason(exc, step))
        return None


def _noted(atif: AtifFile | AtifRefusal, failures: list[str]) -> AtifFile | AtifRefusal:
    """The row's ATIF digest; our converter's own failure, if it had one, joins ``failures``."""
    if isinstance(atif, AtifRefusal) and atif.failure is not None:
        failures.append(atif.failure)
    return atif


def _perf_digest(value: dict[str, Any]) -> PerfDigest:
    return PerfDigest(perf_group(value), summary_input(value.get("ng_perf")))


def _notes(row: dict[str, Any], rollout_id: str | None) -> tuple[str, ...]:
    """What the manifest says about a collected row: no capture id, and its capture gap codes.

    The gaps are the evidence 0.7.0 writes into the row (missing or damaged capture, failed
    observation join, ...); repeating their codes per attempt makes every bad input findable
    from the manifest alone.
    """
    notes = [] if rollout_id is not None else [NO_CAPTURE_ID]
    capture = row.get("ng_model_call_capture")
    gaps = capture.get("gaps") if isinstance(capture, dict) else None
    if isinstance(gaps, list):
        notes.extend(f"gap {gap['code']}" for gap in gaps if isinstance(gap, dict) and isinstance(gap.get("code"), str))
    return tuple(notes)
