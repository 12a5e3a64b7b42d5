"""One side of a comparison: what the caller read from a run directory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evidence.compare.facts import RolloutFacts, VerdictFacts
from evidence.models.run import FinishedRun

__all__ = ["RunEvidence"]


@dataclass(frozen=True, slots=True)
class RunEvidence:
    """The parsed outputs of one run; a document the run does not have is None.

    Attributes:
        location: the run directory's URL (shown, never opened).
        manifest: ``manifest.json``, typed.
        quality_summary: ``health/quality_summary.json``.
        perf_summary: ``perf_summary.json``.
        capabilities: ``capabilities.json``.
        gate: ``gate.json`` (a quality gate's result), None when the run has none.
        accounting: ``accounting.json`` (expected/landed rollouts), None when the run has none.
        rollouts: the main rows' facts, in file order.
        verdicts: the verdict lines' facts, in file order (empty without a health report).
        atif_accepted: rollout labels of ``atif/manifest.jsonl``, in file order.
        atif_rejections: the ``atif/rejections.jsonl`` lines, in file order.
        scores: ``scores.json`` (raw against clean per group and key metric), None when the run
            has none (a run written before scores were).
    """

    location: str
    manifest: FinishedRun
    quality_summary: Mapping[str, Any] | None
    perf_summary: Mapping[str, Any] | None
    capabilities: Mapping[str, Any] | None
    gate: Mapping[str, Any] | None
    accounting: Mapping[str, Any] | None
    rollouts: Sequence[RolloutFacts]
    verdicts: Sequence[VerdictFacts]
    atif_accepted: Sequence[str]
    atif_rejections: Sequence[Mapping[str, Any]]
    scores: Mapping[str, Any] | None = None
