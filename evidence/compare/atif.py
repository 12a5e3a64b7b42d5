"""ATIF acceptance, A against B: files written, rows refused, and refusal reasons that moved."""

from __future__ import annotations

from collections import Counter

from evidence.compare.model import AtifChange, ReasonChange, change, limited
from evidence.compare.run import RunEvidence

__all__ = ["atif_change"]


def atif_change(a: RunEvidence, b: RunEvidence) -> AtifChange:
    """Counts from ``atif/manifest.jsonl`` and ``atif/rejections.jsonl``; reasons by exact text.

    A rollout is newly rejected when A exported it and B refused it (by rollout id, the
    ``<task>-<rollout>`` both files name), newly accepted the other way round.
    """
    reasons_a = Counter(str(r.get("error")) for r in a.atif_rejections)
    reasons_b = Counter(str(r.get("error")) for r in b.atif_rejections)
    refused_a = {str(r.get("rollout_id")) for r in a.atif_rejections}
    refused_b = {str(r.get("rollout_id")) for r in b.atif_rejections}
    newly_rejected = sorted(refused_b & set(a.atif_accepted))
    newly_accepted = sorted(refused_a & set(b.atif_accepted))
    return AtifChange(
        accepted=change(len(a.atif_accepted), len(b.atif_accepted)),
        rejected=change(len(a.atif_rejections), len(b.atif_rejections)),
        reasons=[
            ReasonChange(reason=reason, a=reasons_a[reason], b=reasons_b[reason])
            for reason in sorted({*reasons_a, *reasons_b})
            if reasons_a[reason] != reasons_b[reason]
        ],
        newly_rejected=len(newly_rejected),
        newly_accepted=len(newly_accepted),
        newly_rejected_rollouts=limited(newly_rejected),
        newly_accepted_rollouts=limited(newly_accepted),
    )
