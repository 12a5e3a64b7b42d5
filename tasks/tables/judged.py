"""One attempt as its analysis outputs need it once the run has judged it: ``JudgedAttempt``.

Both writers of a run's tables and viewer produce these, in manifest order: the reduce from
the attempts' parts (``tasks/reduce/analysis.py``) and a rebuild from a finished run's outputs
(``tasks/tables/build.py``). ``identity_of`` is the one reading of a manifest attempt entry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evidence import AttemptEntry
from evidence.tables import AttemptIdentity, RowFacts
from evidence.viewer import ViewFacts


@dataclass(frozen=True, slots=True)
class JudgedAttempt:
    """An attempt's identity, what its row gives, and the run's judgement of it.

    Attributes:
        identity: its keys, place and manifest entry.
        facts: its row's ``rollouts`` values (its child rows are written when they are read).
        view: what the viewer shows of a main row (None for a sidecar row, or when its row
            could not be read).
        verdict: its line of ``health/rollout_verdicts.jsonl`` (None: health has none).
        atif: its ATIF columns (``evidence.tables.atif_columns``; ``NO_ATIF`` for a sidecar row).
    """

    identity: AttemptIdentity
    facts: RowFacts
    view: ViewFacts | None
    verdict: Mapping[str, Any] | None
    atif: tuple[str | None, str | None, str | None]


def identity_of(entry: AttemptEntry, job_id: str, run_id: str, shard_files: Sequence[str], output_line: int, size: int) -> AttemptIdentity:
    """An attempt's identity from its manifest entry (``AttemptLog`` writes them), its line in
    its output file and the bytes of that line."""
    shard = entry.shard
    return AttemptIdentity(
        job_id=job_id,
        run_id=run_id,
        key=entry.key,
        shard=shard,
        shard_file=shard_files[shard] if shard < len(shard_files) else None,
        source=entry.source,
        line=entry.line,
        output_line=output_line,
        rollout_id=entry.rollout_id,
        status=entry.status,
        reason=entry.reason,
        notes=entry.notes,
        repaired=entry.repaired,
        size=size,
    )
