"""Everything the run report shows, gathered by the caller: the report itself reads no files.

The run id and the times appear only here (and in manifest.json): every other output of a run
is byte-identical across reruns (README, guarantee 3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # evidence.report.scores renders with markdown, which reads this module
    from evidence.report.scores import MaskedRollout

__all__ = ["ReportContext"]


@dataclass(frozen=True, slots=True)
class ReportContext:
    """The inputs of ``report.html`` and of the Prefect artifacts.

    Attributes:
        job_id: the job's id (FORMATS.md, "Names and order").
        run_id: the run's id.
        started_at: when the run started, already formatted by the caller (ISO 8601, UTC).
        finished_at: when the run finished, formatted likewise.
        inputs: label -> URL of each input (rollouts file, capture directory, ...).
        parameters: the run's parameters as written to manifest.json.
        quality_summary: the parsed ``health/quality_summary.json``, or None when absent.
        capabilities: the ``capabilities.json`` document (:func:`evidence.capabilities.build_capabilities`),
            or None when absent.
        perf_summary: the parsed ``perf_summary.json`` (``{"run": ..., "groups": {...}}``), or None.
        latency_ms: per-rollout ``ng_perf.total_latency_ms`` values (histogram).
        tokens_per_turn: per-rollout completion tokens per turn (histogram).
        links: (label, href relative to the run directory) of the run's files, in display order.
        accounting: the ``accounting.json`` document (:func:`evidence.run_accounting`), or None.
        gate: the ``gate.json`` document (:func:`evidence.evaluate_gate`), or None for an ungated run.
        scores: the ``scores.json`` document (:func:`evidence.build_scores`), or None when absent.
        masked_verdicts: the health verdicts the clean scores mask (the run's ``score_mask``).
        masked_rollouts: the first masked rollouts of ``health/rollout_verdicts.jsonl``
            (:func:`evidence.report.scores.masked_rollout`), at most ``MASKED_LISTED``.
        rewards: per-rollout rewards (histogram; :func:`evidence.reward_values`).
        scope: ``full``, or what a subset run selected (``subset: rollout ids a, b``).
        viewer: the rollout viewer's page (``viewer/index.html``, relative to the run directory), or None when the run has none.
        live: a followed job's ``live.json`` document (:class:`evidence.LiveStatus`) while it runs: the page then says it is
            live and provisional, and names the stalled and in-flight rollouts; None for a finished run.
    """

    job_id: str
    run_id: str
    started_at: str
    finished_at: str
    inputs: Mapping[str, str]
    parameters: Mapping[str, Any]
    quality_summary: Mapping[str, Any] | None
    capabilities: Mapping[str, Any] | None
    perf_summary: Mapping[str, Any] | None
    latency_ms: Sequence[float]
    tokens_per_turn: Sequence[float]
    links: Sequence[tuple[str, str]]
    accounting: Mapping[str, Any] | None = None
    gate: Mapping[str, Any] | None = None
    scores: Mapping[str, Any] | None = None
    masked_verdicts: Sequence[str] = ("unhealthy",)
    masked_rollouts: Sequence[MaskedRollout] = ()
    rewards: Sequence[float] = ()
    scope: str = "full"
    viewer: str | None = None
    live: Mapping[str, Any] | None = None
