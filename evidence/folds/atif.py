"""The run's ATIF acceptance over its main rows, in input order (0.7.0's export rules).

Each main row arrives with its own conversion's digest (an accepted file or a refusal). The
first row with a ``(task, rollout)`` key is exported and a later one refused with 0.7.0's
duplicate text (``FirstKeyWins``); an all-or-nothing run also replays 0.7.0's batch export over
the rows (``BatchRules``), whose error, if any, is all such a run publishes. Storage is the
caller's: this fold only decides, and hands on what the batch records for a refused row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evidence.atif import BatchRules, FirstKeyWins
from evidence.atif.digest import AtifFile, AtifRefusal

__all__ = ["AtifAcceptance", "AtifDecision"]


@dataclass(frozen=True, slots=True)
class AtifDecision:
    """What one main row adds to the run's ATIF outputs."""

    accepted: AtifFile | None  # the file to publish, or None when the row is rejected
    rejection: dict[str, Any] | None  # its ``atif/rejections.jsonl`` entry when rejected
    batch_refusal: str | None  # an all-or-nothing run: the text 0.7.0's batch records for the row


class AtifAcceptance:
    """ATIF decisions taken in input order; holds the keys seen (two ints each)."""

    def __init__(self, all_or_nothing: bool) -> None:
        self._keys = FirstKeyWins()
        self._batch = BatchRules() if all_or_nothing else None

    @property
    def all_or_nothing(self) -> bool:
        return self._batch is not None

    def decide(self, line: int, rollout_id: str | None, atif: AtifFile | AtifRefusal) -> AtifDecision:
        """The decision on the main row at ``line`` of ``rollouts.jsonl``, from its digest."""
        batch_refusal = None
        if self._batch is not None:
            agent = atif.agent if isinstance(atif, AtifFile) else None
            message = atif.message if isinstance(atif, AtifRefusal) else None
            batch_refusal = self._batch.replay(line, atif.key, agent, message)
        refusal = atif.message if isinstance(atif, AtifRefusal) else self._keys.refusal(atif.key)
        if refusal is not None:
            return AtifDecision(None, {"line": line, "rollout_id": rollout_id, "error": refusal}, batch_refusal)
        assert isinstance(atif, AtifFile)
        return AtifDecision(atif, None, batch_refusal)

    def batch_error(self, refused: list[str]) -> str | None:
        """An all-or-nothing run's error once every main row is in (``refused``: the texts its
        batch recorded, in order), else None: the files are published."""
        assert self._batch is not None, "only an all-or-nothing run replays the batch"
        return self._batch.error(refused)
