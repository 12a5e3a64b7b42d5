"""Rollout health checks and reports, as NeMo Gym 0.7.0 computes them.

Two halves, one implementation: ``evaluate_row`` turns one row into a small JSON-ready
``RowDigest`` (per attempt, in parallel); two streaming passes (``identity_sizes``, then
``HealthFold``) turn the digests, in file order, into ``quality_summary.json`` and the
``rollout_verdicts.jsonl`` lines, sorted by ``verdict_order``; ``reduce_digests`` runs both in memory. ``health_check_bytes`` runs both
over a whole rollouts file for the drop-in command.
"""

from evidence.health.digest import RowDigest, RowStats
from evidence.health.dropin import SUMMARY_NAME, VERDICTS_NAME, HealthFiles, digest_lines, health_check_bytes
from evidence.health.evaluate import evaluate_row, unreadable_row
from evidence.health.ignored import UnknownHealthCheck, normalize_ignored_checks, parse_ignored_checks, split_check_ids
from evidence.health.reduce import (
    HealthFold,
    HealthResult,
    health_report_text,
    identity_sizes,
    reduce_digests,
    verdict_line,
    verdict_order,
)
from evidence.health.registry import CHECK_IDS, CHECKS, CheckSpec

__all__ = [
    "CHECKS",
    "CHECK_IDS",
    "SUMMARY_NAME",
    "VERDICTS_NAME",
    "CheckSpec",
    "HealthFiles",
    "HealthFold",
    "HealthResult",
    "RowDigest",
    "RowStats",
    "UnknownHealthCheck",
    "digest_lines",
    "evaluate_row",
    "health_check_bytes",
    "health_report_text",
    "identity_sizes",
    "normalize_ignored_checks",
    "parse_ignored_checks",
    "reduce_digests",
    "split_check_ids",
    "unreadable_row",
    "verdict_line",
    "verdict_order",
]
