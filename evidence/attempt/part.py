"""The part format: one attempt's outcome as bytes (made in pieces), versioned, read back by the reduce and resume.

Layout::

    evidence-part/6[ exact]\\n     magic and version; "exact" when the header holds wide integers
    <header JSON>\\n               every field of the outcome but the blobs, plus blob lengths
    <row line><ATIF text><view>    the blobs back to back, raw bytes (no JSON-in-JSON escaping);
                                   the ATIF file is its text plus a final newline; the viewer's
                                   facts (JSON) are read only by the reduce's last pass

A part that cannot be decoded (damage) is reported by :class:`PartError`. A part of another
version is never read: ``PART_VERSION`` is in each attempt's fingerprint, so a resume redoes
the parts an older version wrote. The header goes through the library's one JSON writer, so no
outcome can make encoding raise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from evidence.attempt.outcome import AtifFile, AtifRefusal, AttemptOutcome, MainDigests, PerfDigest, Status
from evidence.errors import EvidenceError
from evidence.folds.digest import ScoreDigest
from evidence.health import RowDigest
from evidence.jsonl import dumps, loads_exact, orjson_line
from evidence.tables import RowFacts

__all__ = ["PART_VERSION", "AttemptPart", "PartError", "decode_part", "decode_part_located", "encode_part"]

PART_VERSION = 7
_MAGIC = f"evidence-part/{PART_VERSION}".encode()
_EXACT = _MAGIC + b" exact"


class PartError(EvidenceError, ValueError):
    """Bytes that are not a part of this version."""


@dataclass(frozen=True, slots=True)
class AttemptPart:
    """What an attempt's part holds: the outcome, and what the task layer knew of the attempt.

    Attributes:
        fingerprint: the attempt's input fingerprint when processed (resume compares it).
        seconds: time spent on the attempt (the manifest's ``seconds``).
        outcome: the engine's outcome.
    """

    fingerprint: str
    seconds: float
    outcome: AttemptOutcome


def encode_part(part: AttemptPart) -> list[bytes | memoryview]:
    """The part's bytes, in pieces whose concatenation is the part; never raises for an outcome the engine made.

    The row line and the ATIF file are pieces of their own, the outcome's very objects: a long
    row's part costs no copy of them until it is written.
    """
    outcome = part.outcome
    blobs: list[tuple[bytes | memoryview, ...]] = [(outcome.line,)]
    header: dict[str, Any] = {
        "fingerprint": part.fingerprint,
        "seconds": part.seconds,
        "status": outcome.status.value,
        "reason": outcome.reason,
        "notes": list(outcome.notes),
        "repaired": outcome.repaired,
        "rollout_id": outcome.rollout_id,
        "main": None if outcome.main is None else _main_header(outcome.main, blobs),
        "facts": None if outcome.facts is None else outcome.facts.to_json(),
    }
    header["blob_lengths"] = [sum(map(len, blob)) for blob in blobs]
    compact = orjson_line(header)
    magic, text = (_MAGIC, compact) if compact is not None else (_EXACT, dumps(header))
    return [magic + b"\n" + text + b"\n", *(piece for blob in blobs for piece in blob)]


def _blob(blobs: list[tuple[bytes | memoryview, ...]], data: bytes) -> int:
    """Append ``data`` as a blob of its own; its position among the blobs."""
    blobs.append((data,))
    return len(blobs) - 1


def _main_header(main: MainDigests, blobs: list[tuple[bytes | memoryview, ...]]) -> dict[str, Any]:
    atif: dict[str, Any]
    if isinstance(main.atif, AtifFile):
        blobs.append(main.atif.text)
        atif = {
            "key": list(main.atif.key),
            "name": main.atif.name,
            "manifest_line": main.atif.manifest_line.decode(),
            "agent": main.atif.agent,
        }
    else:
        key = main.atif.key
        atif = {"refusal": main.atif.message, "key": list(key) if isinstance(key, tuple) else key}
    return {
        "health": None if main.health is None else main.health.to_json(),
        "capability": main.capability,
        "perf": None if main.perf is None else {"group": main.perf.group, "record": main.perf.record},
        "atif": atif,
        "score": None if main.score is None else main.score.to_json(),
        "view": None if main.view is None else _blob(blobs, main.view),
    }


def decode_part(data: bytes | memoryview) -> AttemptPart:
    """Inverse of :func:`encode_part`.

    The outcome's line is a view of ``data`` (no copy: the reduce writes it straight on); every
    other field is copied out, so nothing else keeps ``data`` alive.

    Raises:
        PartError: not a part of this version, truncated or damaged.
    """
    return decode_part_located(data)[0]


def decode_part_located(data: bytes | memoryview) -> tuple[AttemptPart, int]:
    """:func:`decode_part`, and where in ``data`` the outcome's line starts (the reduce has the
    kernel copy a line from a local segment file, without reading it: ``tasks/storage/lines.py``).

    Raises:
        PartError: not a part of this version, truncated or damaged.
    """
    try:
        return _decode(data)
    except PartError:
        raise
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise PartError(f"damaged part: {type(exc).__name__}: {exc}") from exc


def _decode(data: bytes | memoryview) -> tuple[AttemptPart, int]:
    view = memoryview(data)
    magic_end = _newline(view, 0)
    header_end = _newline(view, magic_end + 1)
    magic = bytes(view[: max(magic_end, 0)])
    if magic_end < 0 or header_end < 0 or magic not in (_MAGIC, _EXACT):
        raise PartError(f"not an evidence-stage part of version {PART_VERSION:d}")
    text = view[magic_end + 1 : header_end]
    header = loads_exact(bytes(text)) if magic == _EXACT else orjson.loads(text)
    blobs: list[memoryview] = []
    position = header_end + 1
    for length in header["blob_lengths"]:
        blobs.append(view[position : position + length])
        position += length
    if position != len(view):
        raise PartError("part length does not match its header")
    main = None if header["main"] is None else _main(header["main"], blobs)
    outcome = AttemptOutcome(
        status=Status(header["status"]),
        reason=header["reason"],
        notes=tuple(header["notes"]),
        repaired=header["repaired"],
        rollout_id=header["rollout_id"],
        line=blobs[0],
        main=main,
        facts=None if header["facts"] is None else RowFacts.from_json(header["facts"]),
    )
    return AttemptPart(header["fingerprint"], header["seconds"], outcome), header_end + 1


def _newline(view: memoryview, start: int) -> int:
    """The position of the first newline at or after ``start`` in ``view``; -1 when there is none."""
    block = 64 * 1024
    for begin in range(start, len(view), block):
        found = bytes(view[begin : begin + block]).find(b"\n")
        if found >= 0:
            return begin + found
    return -1


def _main(data: dict[str, Any], blobs: list[memoryview]) -> MainDigests:
    atif_data = data["atif"]
    atif: AtifFile | AtifRefusal
    key = atif_data["key"]
    if "refusal" in atif_data:
        atif = AtifRefusal(atif_data["refusal"], (key[0], key[1]) if isinstance(key, list) else key)
    else:
        atif = AtifFile((key[0], key[1]), atif_data["name"], (bytes(blobs[1]),), atif_data["manifest_line"].encode(), atif_data["agent"])
    perf = data["perf"]
    return MainDigests(
        health=None if data["health"] is None else RowDigest.from_json(data["health"]),
        capability=data["capability"],
        perf=None if perf is None else PerfDigest(perf["group"], perf["record"]),
        atif=atif,
        score=None if data["score"] is None else ScoreDigest.from_json(data["score"]),
        view=None if data["view"] is None else bytes(blobs[data["view"]]),
    )
