"""One row's ATIF outcome: the file it exports to, or 0.7.0's refusal of it.

The one way a row becomes ATIF, shared by the attempt engine (every main row), the reduce's
all-or-nothing replay (which reads what the engine found) and the ``export-atif`` drop-in
(``evidence.atif.batch``): convert (:func:`convert_row`), then encode (:func:`encode_converted`),
or both from a line as the strict loader reads it (:func:`atif_of_line`). Converting and
encoding are two calls so the engine can drop a long decoded row before the file is encoded:
the document holds what the file needs of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evidence.atif.convert import AtifIdentity, agent_name, decode_row, rollout_to_atif, row_key
from evidence.atif.encode import FINAL_NEWLINE, encode_file
from evidence.atif.strict_json import may_hold_surrogate
from evidence.errors import AtifExportError, failure_reason

__all__ = ["AtifConverted", "AtifFile", "AtifRefusal", "atif_of_line", "convert_row", "encode_converted"]


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
    failure: str | None = None  # our converter's own failure (``failure_reason``), not 0.7.0's refusal


@dataclass(frozen=True, slots=True)
class AtifConverted:
    """A row's ATIF document before it is encoded, with the row's key and agent label."""

    key: tuple[int, int]
    agent: str | None
    document: dict[str, Any]


def convert_row(row: dict[str, Any], identity: AtifIdentity, *, hygiene: bool, contain: bool = True) -> AtifConverted | AtifRefusal:
    """The row's ATIF document, or 0.7.0's refusal of the row.

    ``hygiene`` as :func:`~evidence.atif.convert.rollout_to_atif` takes it. With ``contain`` our
    converter's own failure (anything but 0.7.0's refusal) refuses the row and names the failure,
    so one bad row never stops a run; the drop-in passes False and stops, as 0.7.0's export does.
    """
    key = row_key(row)
    try:
        document = rollout_to_atif(row, hygiene=hygiene, **identity)
    except AtifExportError as exc:
        return AtifRefusal(exc.message, key)
    except Exception as exc:
        if not contain:
            raise
        return _failed(exc, key)
    assert isinstance(key, tuple), "the conversion refuses a row whose row_key is an index field"
    return AtifConverted(key, agent_name(row), document)


def encode_converted(converted: AtifConverted | AtifRefusal, *, contain: bool = True) -> AtifFile | AtifRefusal:
    """The converted document as its file ``<task>-<rollout>.json`` and manifest line (a refusal
    stays one); ``contain`` as :func:`convert_row` takes it."""
    if isinstance(converted, AtifRefusal):
        return converted
    try:
        return AtifFile(converted.key, *encode_file(converted.document, *converted.key), converted.agent)
    except Exception as exc:
        if not contain:
            raise
        return _failed(exc, converted.key)


def atif_of_line(line: bytes, identity: AtifIdentity) -> AtifFile | AtifRefusal:
    """A line as 0.7.0's exporter reads it (strict UTF-8 JSON), converted and encoded."""
    try:
        row = decode_row(line)
    except AtifExportError as exc:
        return AtifRefusal(exc.message, None)
    converted = convert_row(row, identity, hygiene=may_hold_surrogate(line))
    del row  # the document holds what the file needs; a long row's objects are several times its line
    return encode_converted(converted)


def _failed(exc: Exception, key: tuple[int, int] | str | None) -> AtifRefusal:
    reason = failure_reason(exc, "ATIF conversion")
    return AtifRefusal(f"conversion failed: {reason}", key, failure=reason)
