"""The run manifest's per-attempt entries, and writing the manifest without holding them.

The reduce reads every part header once; it records each attempt's manifest entry here (spilled
to a local temporary file) with a few counters. ``manifest_chunks`` then writes ``manifest.json``
with those entries streamed into its ``attempts`` list, byte-identical to ``orjson``'s 2-space
indentation of the whole document, so a 20,000-attempt manifest is never in memory at once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson

from evidence import AttemptPart
from tasks.discover.scan import AttemptRef
from tasks.storage.spill import Spill, TemporaryStore, count_repeats

INDENT = orjson.OPT_INDENT_2


def attempt_status(part: AttemptPart) -> dict[str, Any]:
    """What the manifest says about an attempt, from its part."""
    outcome = part.outcome
    status: dict[str, Any] = {"status": outcome.status.value, "rollout_id": outcome.rollout_id, "seconds": part.seconds}
    if outcome.reason:
        status["reason"] = outcome.reason
    if outcome.repaired:
        status["repaired"] = True
    if outcome.notes:
        status["notes"] = list(outcome.notes)
    return status


class AttemptLog(TemporaryStore):
    """Every attempt's manifest entry in input order (on disk), with the counts the manifest states."""

    def __init__(self) -> None:
        self._entries: Spill[dict[str, Any]] = Spill()
        self._rollout_ids: Spill[str] = Spill()
        self._shared: dict[str, int] | None = None
        self.by_status: Counter[str] = Counter()
        self.repairs = 0

    def add(self, attempt: AttemptRef, part: AttemptPart) -> None:
        status = attempt_status(part)
        entry = {"key": attempt.key, "line": attempt.line, "source": attempt.source, "fingerprint": part.fingerprint, **status}
        self._entries.add(entry)
        self.by_status[status["status"]] += 1
        self.repairs += bool(status.get("repaired"))
        if status["rollout_id"] is not None:
            self._rollout_ids.add(status["rollout_id"])

    @property
    def count(self) -> int:
        return self._entries.count

    def entries(self) -> Iterator[dict[str, Any]]:
        """The entries in input order; attempts sharing a rollout id get a note saying how many do."""
        if self._shared is None:
            self._shared = count_repeats(self._rollout_ids, str)
        for entry in self._entries:
            shared = self._shared.get(entry["rollout_id"], 0)
            if shared:
                entry["notes"] = [*entry.get("notes", []), f"duplicate rollout id: {shared} attempts share it"]
            yield entry

    def close(self) -> None:
        self._entries.close()
        self._rollout_ids.close()


class Streamed:
    """A manifest value produced while it is written: a list of items, or a mapping of (key, value) pairs.

    ``items`` is called each time the manifest is written (a retried write starts over).
    """

    def __init__(self, items: Callable[[], Iterable[Any]], *, pairs: bool = False) -> None:
        self.items = items
        self.pairs = pairs


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
        yield orjson.dumps(value, option=INDENT).replace(b"\n", b"\n" + b"  " * level)


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
