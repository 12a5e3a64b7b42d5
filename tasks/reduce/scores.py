"""The run's scores: 0.7.0's aggregate metrics, the same with untrustworthy rollouts masked, and
the two side by side (``aggregate_metrics.json``, ``aggregate_metrics_clean.json``, ``scores.json``).

One fold (``evidence.AggregateMetricsFold``) reads the spilled score digests once; a rollout is
masked in the clean document when its health verdict is one the run's ``score_mask`` names
(``RunContext.masked_verdicts``), by 0.7.0's own ``mask_sample`` rule, so the clean file's
coverage keys say how many were masked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evidence import AggregateMetricsFold, ScoreDigest, build_scores, dumps
from tasks.attempts.context import RunContext

if TYPE_CHECKING:
    from tasks.reduce.outputs import DocumentSink

NO_HEALTH = -1
"""The health index of a main row without a health digest: it has no verdict, so it is never masked."""


def write_scores(
    ctx: RunContext,
    scores: Iterable[tuple[int, ScoreDigest]],
    masked: Sequence[int],
    perf_groups: Mapping[str, dict[str, Any] | None],
    perf_problems: Iterable[str],
    documents: DocumentSink,
) -> tuple[list[str], dict[str, Any]]:
    """The three score files from ``(health index, digest)`` pairs in input order; the groups left
    out, and the ``scores.json`` document.

    ``masked`` has a byte per health index (position among the main rows with a health
    digest): 1 when the run masks that row's verdict.
    """
    fold = AggregateMetricsFold()
    for health_index, digest in scores:
        fold.add(digest, masked=health_index != NO_HEALTH and bool(masked[health_index]))
    paths = ctx.paths
    # Both files written as their entries are made: a run's documents hold every rollout's
    # ``rollout_infos`` (about 600 bytes per rollout each), which memory need not.
    with documents.stream(paths.aggregate_metrics) as raw_out, documents.stream(paths.aggregate_metrics_clean) as clean_out:
        raw, clean = fold.write(perf_groups, perf_problems, raw_out.write, clean_out.write)
    document = build_scores(raw.headlines, clean.headlines)
    documents.put(paths.scores, dumps(document, indent=True) + b"\n")
    clean_only = [f"clean {refusal}" for refusal in clean.refusals if refusal not in raw.refusals]
    return [str(refusal) for refusal in raw.refusals] + clean_only, document
