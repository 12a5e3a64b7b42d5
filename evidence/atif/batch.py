"""The drop-in ``export-atif`` batch: a whole rollouts file, all or nothing (0.7.0 §7).

The pure part lives here: rows in, files out, or one ``AtifExportError`` with 0.7.0's exact
batch text. The CLI owns the I/O preconditions and prints 0.7.0's texts from the builders
below. Conditions, messages and exit codes, in the order the CLI must check them:

============================================  ==============================================  ====
condition                                     message                                         exit
============================================  ==============================================  ====
blank / invalid session id or agent version   ``<prog>: error: `` + ``config_error_message``  2
rollouts path (expanduser, resolve) is not    ``Error: `` + ``rollouts_not_found_message``    1
a regular file
output path (expanduser, absolute) exists     ``Error: `` + ``output_exists_message``         1
(``os.path.lexists``)
``export_rollouts`` raises AtifExportError    ``Error: `` + ``str(error)``                    1
output appeared while exporting               ``Error: `` + ``output_created_message``        1
success                                       ``success_lines``                               0
============================================  ==============================================  ====
"""

from __future__ import annotations

from collections.abc import Sequence

from evidence.atif.convert import AtifIdentity, agent_name, decode_row, row_key
from evidence.atif.digest import AtifFile, AtifRefusal, convert_row, encode_converted
from evidence.atif.encode import manifest_bytes
from evidence.atif.strict_json import may_hold_surrogate
from evidence.errors import AtifExportError
from evidence.models.atif import Exporter

__all__ = [
    "MANIFEST_NAME",
    "MULTIPLE_AGENTS_MESSAGE",
    "NO_RECORDS_MESSAGE",
    "BatchRules",
    "FirstKeyWins",
    "config_error_message",
    "duplicate_key_message",
    "export_rollouts",
    "output_created_message",
    "output_exists_message",
    "rollouts_not_found_message",
    "success_lines",
]

MANIFEST_NAME = "manifest.jsonl"
NO_RECORDS_MESSAGE = "Rollouts file contains no records"
MULTIPLE_AGENTS_MESSAGE = "Strict ATIF export requires one agent_ref.name per file because --agent-version is batch-scoped"


def duplicate_key_message(key: tuple[int, int]) -> str:
    """The per-row text for a later row repeating an earlier ``(task, rollout)`` key."""
    return f"duplicate Gym rollout key ({key[0]}, {key[1]})"


class FirstKeyWins:
    """ATIF acceptance in input order: the first row with a ``(task, rollout)`` key is exported.

    Shared by the batch export and the stage's reduce, so both refuse a repeated key with the
    same text. Holds the keys it is given, each as one int where it fits (``_seen_as``): a run's
    reduce holds one per main row, and a tuple of two ints takes about 1.7 times the memory.
    """

    def __init__(self) -> None:
        self._seen: set[int | tuple[int, int]] = set()

    def refusal(self, key: tuple[int, int]) -> str | None:
        """None when ``key`` is new (it is recorded), else the duplicate-key refusal text."""
        seen = _seen_as(key)
        if seen in self._seen:
            return duplicate_key_message(key)
        self._seen.add(seen)
        return None


ROLLOUT_BITS = 64


def _seen_as(key: tuple[int, int]) -> int | tuple[int, int]:
    """``task * 2**64 + rollout`` for a rollout index below 2**64 (a different int for every such
    key: row indices are ints, never bools), else the key itself (an int never equals a tuple)."""
    task, rollout = key
    return (task << ROLLOUT_BITS) | rollout if 0 <= rollout < 1 << ROLLOUT_BITS else key


class BatchRules:
    """0.7.0's batch export decisions over a file's rows in line order (§7.2 steps 4-6, §7.3).

    Each row is first ``admit``-ted (its index check, then its key, registered even if the row
    is refused later), then, unless refused, its conversion is ``converted``. Both return the
    text the batch records for a refused row (or None). Shared by the ``export-atif`` drop-in,
    which converts each admitted line, and the stage's all-or-nothing reduce, which replays what
    each attempt's own conversion found. Holds the key of every row with row indices (two ints
    each: a refused row's key still makes a later one a duplicate) and the first agent name.
    """

    def __init__(self) -> None:
        self._keys = FirstKeyWins()
        self._agent: str | None = None
        self._agents = 0  # distinct agent names seen, counted up to two: the rule is "exactly one"
        self._exported = 0

    def admit(self, number: int, key: tuple[int, int] | str) -> str | None:
        """The refusal of a row whose ``row_key`` is ``key`` before its conversion, or None."""
        if isinstance(key, str):
            return f"line {number}.{key}: expected a non-negative integer"
        refusal = self._keys.refusal(key)
        return None if refusal is None else f"line {number}: {refusal}"

    def converted(self, number: int, agent: str | None, refusal: str | None) -> str | None:
        """The row's ``agent_name`` and its conversion's refusal (None: exported); the recorded text."""
        if agent is not None and agent != self._agent and self._agents < 2:
            self._agent, self._agents = agent, self._agents + 1
        if refusal is None:
            self._exported += 1
            return None
        return _recorded(number, refusal)

    def replay(self, number: int, key: tuple[int, int] | str | None, agent: str | None, refusal: str | None) -> str | None:
        """A row whose conversion was already made: ``admit`` then ``converted``; ``key`` None is
        a line that did not decode (``refusal`` says why); the recorded text, or None."""
        if key is None:
            assert refusal is not None, "a line that did not decode is refused"
            return _recorded(number, refusal)
        return self.admit(number, key) or self.converted(number, agent, refusal)

    def error(self, refused: Sequence[str]) -> str | None:
        """The batch's error once every row is in (``refused``: the recorded texts), else None."""
        if refused:
            return _aggregate(refused)
        if not self._exported:
            return NO_RECORDS_MESSAGE
        if self._agents != 1:
            return MULTIPLE_AGENTS_MESSAGE
        return None


def _recorded(number: int, message: str) -> str:
    """A row's refusal as the batch records it: prefixed with ``line N`` unless it starts so."""
    prefix = f"line {number}"
    return message if message.startswith(prefix) else f"{prefix}: {message}"


def rollouts_not_found_message(source: str) -> str:
    """``source`` is the rollouts path after ``expanduser()`` and ``resolve()``."""
    return f"Rollouts file not found: {source}"


def output_exists_message(output: str) -> str:
    """``output`` is the output path after ``expanduser()`` and ``absolute()`` (not resolved)."""
    return f"Output path already exists: {output}"


def output_created_message(output: str) -> str:
    """The race check just before publishing the staged directory."""
    return f"Output path was created during export: {output}"


def success_lines(count: int, output: str) -> list[str]:
    """What 0.7.0 prints after a successful export."""
    return [f"Exported {count} ATIF trajectory file(s) to {output}", f"Manifest: {output}/{MANIFEST_NAME}"]


def config_error_message(field: str, value: str) -> str | None:
    """The argparse error text (exit 2) for an unusable session id / agent version, else ``None``."""
    if not value:
        return f"invalid configuration: {field} (String should have at least 1 character)."
    if not value.strip():
        return f"invalid configuration: {field} (Value error, must contain a non-whitespace character)."
    return None


def _aggregate(recorded: Sequence[str]) -> str:
    return f"ATIF export rejected {len(recorded)} row(s):" + "".join(f"\n- {text}" for text in recorded)


def _lines(data: bytes) -> list[bytes]:
    """Split on ``\\n`` only; a final line without newline is a row, the tail after one is not."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return lines


class _Batch:
    """The per-line loop state: what was exported and what was refused, under ``BatchRules``."""

    def __init__(self, session_id: str, agent_version: str, exporter: Exporter) -> None:
        self.identity = AtifIdentity(session_id=session_id, agent_version=agent_version, exporter=exporter)
        self.files: list[AtifFile] = []
        self.refused: list[str] = []
        self.rules = BatchRules()

    def add(self, number: int, line: bytes) -> str | None:
        """The row's recorded refusal, or None once it is exported."""
        if not line.strip():
            return _recorded(number, "blank JSONL records are not supported")
        try:
            row = decode_row(line)
        except AtifExportError as error:
            return _recorded(number, error.message)
        key = row_key(row)
        refusal = self.rules.admit(number, key)
        if refusal is not None:
            return refusal
        assert not isinstance(key, str)
        converted = convert_row(row, self.identity, hygiene=may_hold_surrogate(line), contain=False)
        if isinstance(converted, AtifRefusal):
            return self.rules.converted(number, agent_name(row), converted.message)
        encoded = encode_converted(converted, contain=False)
        assert isinstance(encoded, AtifFile), "an uncontained encoding raises instead of refusing"
        self.files.append(encoded)
        return self.rules.converted(number, converted.agent, None)

    def run(self, data: bytes) -> list[tuple[str, bytes]]:
        for number, line in enumerate(_lines(data), start=1):
            refusal = self.add(number, line)
            if refusal is not None:
                self.refused.append(refusal)
        error = self.rules.error(self.refused)
        if error is not None:
            raise AtifExportError(error)
        files = [(file.name, b"".join(file.chunks())) for file in self.files]
        return [*files, (MANIFEST_NAME, manifest_bytes(self.files))]


def export_rollouts(data: bytes, *, session_id: str, agent_version: str, exporter: Exporter) -> list[tuple[str, bytes]]:
    """Export a whole rollouts file: ``(file name, bytes)`` per row in input order, then the manifest.

    Raises ``AtifExportError`` with 0.7.0's batch text when any row is refused, the file has
    no records, or the rows name more than one agent; nothing is returned then.
    """
    return _Batch(session_id, agent_version, exporter).run(data)
