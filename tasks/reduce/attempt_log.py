"""The run manifest's per-attempt entries, held on local disk until the manifest is written.

The reduce reads every part header once; it records each attempt's manifest entry here (spilled
to a local temporary file) with a few counters. ``RunManifest`` (``evidence.models.run``) then
streams those entries into ``manifest.json``'s ``attempts`` list, so a 20,000-attempt manifest
is never in memory at once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from evidence import AttemptPart
from tasks.discover.refs import AttemptRef
from tasks.storage.spill import Spill, TemporaryStore, count_repeats


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

    def add(self, attempt: AttemptRef, part: AttemptPart) -> dict[str, Any]:
        """Record the next attempt's entry; the entry as it stands (``entries`` adds the notes only the whole run knows)."""
        status = attempt_status(part)
        entry = {"key": attempt.key, "line": attempt.line, "source": attempt.source, "fingerprint": part.fingerprint, **status}
        self._entries.add(entry)
        self.by_status[status["status"]] += 1
        self.repairs += bool(status.get("repaired"))
        if status["rollout_id"] is not None:
            self._rollout_ids.add(status["rollout_id"])
        return entry

    @property
    def count(self) -> int:
        return self._entries.count

    def shares_rollout_ids(self) -> bool:
        """Whether any two attempts recorded share a rollout id (their entries then get a note); once every attempt is."""
        return bool(self._shared_ids())

    def _shared_ids(self) -> dict[str, int]:
        if self._shared is None:
            self._shared = count_repeats(self._rollout_ids, str)
        return self._shared

    def recorded(self) -> Iterable[dict[str, Any]]:
        """The entries recorded so far, as ``add`` returned them (no note that needs the whole run): a
        followed job's snapshot reads them while later ones are added."""
        return self._entries.prefix()

    def entries(self) -> Iterator[dict[str, Any]]:
        """The entries in input order; attempts sharing a rollout id get a note saying how many do."""
        shared_ids = self._shared_ids()
        for entry in self._entries:
            shared = shared_ids.get(entry["rollout_id"], 0)
            if shared:
                entry["notes"] = [*entry.get("notes", []), f"duplicate rollout id: {shared} attempts share it"]
            yield entry

    def close(self) -> None:
        self._entries.close()
        self._rollout_ids.close()
