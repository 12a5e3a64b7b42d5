"""The quality gate: limits on a run's accounting and health, each measured and judged.

A gate never stops a run from being written: evidence is evidence. It decides whether the run
may stand as the job's ``LATEST`` (what downstream metrics read), and says which limits
failed and by how much. A limit that cannot be measured (a share of an unknown or empty
whole) fails: a gate that cannot tell is not a gate that passed.

Shares of what the job owed (``expected``, from the materialized inputs) are
``min_landed_share``, ``max_lost_share``, ``max_failed_share`` and
``max_failed_share.<failure class>``; shares of main rows are ``max_unhealthy_share`` and
``max_unobserved_share``; ``min_observed_share.<check id>`` is the share of rollouts (tasks,
for a task check) on which the check was evaluated rather than unobserved.

Limits on the scores (``scores.json``) are numbers in the metrics' own units, not shares:
``max_score_shift`` bounds ``|clean - raw|`` of every key metric in every group
(``max_score_shift.<metric>`` of one key metric, such as ``mean/reward``), and
``min_key_metric.<metric>`` is the least clean score of that metric in every group that has it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["evaluate_gate", "gate_reason"]

SCORE_LIMITS = ("max_score_shift", "min_key_metric")
"""The limits measured on ``scores.json``, in the metrics' own units (not shares)."""


def evaluate_gate(
    limits: Mapping[str, float],
    accounting: Mapping[str, Any],
    quality_summary: Mapping[str, Any],
    scores: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``gate.json`` document: ``passed``, each limit with its measured value, the failing names.

    Args:
        limits: limit name (``max_failed_share.<class>``, ``min_observed_share.<check id>``, ...) -> value,
            as ``flows.params.GateLimits.named`` gives them (an empty gate passes).
        accounting: the run's ``accounting.json`` document.
        quality_summary: the run's ``health/quality_summary.json`` document.
        scores: the run's ``scores.json`` document (:func:`evidence.build_scores`); needed only by
            the score limits, which fail unmeasured without it.
    """
    judged = [_judge(name, value, accounting, quality_summary, scores) for name, value in limits.items()]
    failing = [entry["name"] for entry in judged if not entry["passed"]]
    return {"passed": not failing, "failing": failing, "limits": judged}


def gate_reason(gate: Mapping[str, Any]) -> str:
    """One line naming every failing limit with what was measured."""
    parts = [
        f"{e['name']} {_shown(e['measured'])} (limit {_shown(e['limit'])})" if e["measured"] is not None else f"{e['name']}: {e['reason']}"
        for e in gate["limits"]
        if not e["passed"]
    ]
    return "quality gate failed: " + "; ".join(parts)


def _shown(value: float) -> str:
    return f"{value:.4g}"


def _judge(
    name: str, limit: float, accounting: Mapping[str, Any], summary: Mapping[str, Any], scores: Mapping[str, Any] | None
) -> dict[str, Any]:
    base, _, suffix = name.partition(".")
    if base in SCORE_LIMITS:
        measured, why = _measure_scores(base, suffix, scores)
    else:
        measured, why = _measure(name, accounting, summary)
    entry: dict[str, Any] = {"name": name, "limit": limit, "measured": measured}
    if measured is None:
        return {**entry, "passed": False, "reason": why}
    held = measured >= limit if name.startswith("min_") else measured <= limit
    where = f" ({why})" if why else ""
    return {**entry, "passed": held, "reason": None if held else f"{'below' if name.startswith('min_') else 'above'} the limit{where}"}


def _measure_scores(base: str, metric: str, scores: Mapping[str, Any] | None) -> tuple[float | None, str]:
    """(the measured value and where it was measured, or None and why it cannot be measured).

    ``max_score_shift`` is the largest ``|clean - raw|`` over the groups' key metrics (one
    metric's when named); ``min_key_metric.<metric>`` the smallest clean value of the metric over
    the groups that have it. A group whose figure is null (every rollout masked, or 0.7.0 left
    the group out) cannot be judged, so the limit fails unmeasured rather than skip it.
    """
    if scores is None:
        return None, "no scores.json"
    found = [
        (f"{group} {name}", metric_entry)
        for group, entry in scores.get("groups", {}).items()
        for name, metric_entry in entry.get("metrics", {}).items()
        if not metric or name == metric
    ]
    if not found:
        return None, f"no group has the key metric {metric}" if metric else "no group has a key metric"
    field = "difference" if base == "max_score_shift" else "clean"
    missing = [where for where, entry in found if not _is_number(entry.get(field))]
    if missing:
        what = "clean - raw" if field == "difference" else "clean score"
        return None, f"no {what} for {', '.join(missing)} (every rollout masked, or the group left out)"
    values = [(abs(entry[field]) if field == "difference" else entry[field], where) for where, entry in found]
    value, where = max(values) if base == "max_score_shift" else min(values)
    return float(value), where


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _measure(name: str, accounting: Mapping[str, Any], summary: Mapping[str, Any]) -> tuple[float | None, str]:
    """(the measured share, or None and why it cannot be measured)."""
    base, _, suffix = name.partition(".")
    run = summary["run"]
    if base in ("max_unhealthy_share", "max_unobserved_share"):
        records = run["artifacts"]["records"]
        verdict = "unhealthy" if base == "max_unhealthy_share" else "unobserved"
        return (run["verdicts"][verdict] / records, "") if records else (None, "no main rows")
    if base == "min_observed_share":
        coverage = run["artifacts"]["coverage"][suffix]
        seen = coverage["evaluated"] + coverage["unobserved"]
        return (coverage["evaluated"] / seen, "") if seen else (None, "the check was ignored or had nothing to check")
    expected = accounting["expected"]
    if not expected:
        if accounting.get("scope") == "subset":
            return None, "a subset run owes nothing (expected unknown)"
        unknown = ", ".join(accounting["expected_unknown"])
        return None, f"expected unknown (no materialized inputs: {unknown})" if expected is None else "nothing was expected"
    if base == "min_landed_share":
        return (accounting["landed"] - accounting["duplicates"] - accounting["unexpected"]) / expected, ""
    if base == "max_lost_share":
        return accounting["lost"] / expected, ""
    failed = accounting["failed_by_class"].get(suffix, 0) if suffix else accounting["failed"]
    return failed / expected, ""
