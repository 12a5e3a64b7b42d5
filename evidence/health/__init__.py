"""Rollout health checks and reports, as NeMo Gym 0.7.0 computes them.

Two halves, one implementation: ``evaluate_row`` turns one row into a small JSON-ready
``RowDigest`` (per attempt, in parallel); ``reduce_digests`` turns the digests, in file order,
into ``quality_summary.json`` and ``rollout_verdicts.jsonl``. ``health_check_bytes`` runs both
over a whole rollouts file for the drop-in command.
"""

from evidence.health.digest import RowDigest, RowStats
from evidence.health.dropin import VERDICTS_NAME, SUMMARY_NAME, HealthFiles, digest_lines, health_check_bytes
from evidence.health.evaluate import evaluate_row, unreadable_row
from evidence.health.ignored import UnknownHealthCheck, normalize_ignored_checks
from evidence.health.reduce import HealthResult, health_report_text, reduce_digests
from evidence.health.registry import CHECK_IDS, CHECKS, CheckSpec

__all__ = [
    "CHECKS",
    "CHECK_IDS",
    "SUMMARY_NAME",
    "VERDICTS_NAME",
    "CheckSpec",
    "HealthFiles",
    "HealthResult",
    "RowDigest",
    "RowStats",
    "UnknownHealthCheck",
    "digest_lines",
    "evaluate_row",
    "health_check_bytes",
    "health_report_text",
    "normalize_ignored_checks",
    "reduce_digests",
    "unreadable_row",
]
