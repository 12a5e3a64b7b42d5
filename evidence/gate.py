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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


__all__ = ["evaluate_gate", "gate_reason"]


def evaluate_gate(limits: Mapping[str, float], accounting: Mapping[str, Any], quality_summary: Mapping[str, Any]) -> dict[str, Any]:
    """The ``gate.json`` document: ``passed``, each limit with its measured value, the failing names.

    Args:
        limits: limit name (``max_failed_share.<class>``, ``min_observed_share.<check id>``, ...) -> value,
            as ``flows.params.GateLimits.named`` gives them (an empty gate passes).
        accounting: the run's ``accounting.json`` document.
        quality_summary: the run's ``health/quality_summary.json`` document.
    """
    judged = [_judge(name, value, accounting, quality_summary) for name, value in limits.items()]
    failing = [entry["name"] for entry in judged if not entry["passed"]]
    return {"passed": not failing, "failing": failing, "limits": judged}


def gate_reason(gate: Mapping[str, Any]) -> str:
    """One line naming every failing limit with what was measured."""
    parts = [f"{e['name']} {_shown(e['measured'])} (limit {_shown(e['limit'])})" if e["measured"] is not None else f"{e['name']}: {e['reason']}" for e in gate["limits"] if not e["passed"]]
    return "quality gate failed: " + "; ".join(parts)


def _shown(value: float) -> str:
    return f"{value:.4g}"


def _judge(name: str, limit: float, accounting: Mapping[str, Any], summary: Mapping[str, Any]) -> dict[str, Any]:
    measured, why = _measure(name, accounting, summary)
    entry: dict[str, Any] = {"name": name, "limit": limit, "measured": measured}
    if measured is None:
        return {**entry, "passed": False, "reason": why}
    held = measured >= limit if name.startswith("min_") else measured <= limit
    return {**entry, "passed": held, "reason": None if held else f"{'below' if name.startswith('min_') else 'above'} the limit"}


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
        unknown = ", ".join(accounting["expected_unknown"])
        return None, f"expected unknown (no materialized inputs: {unknown})" if expected is None else "nothing was expected"
    if base == "min_landed_share":
        return (accounting["landed"] - accounting["duplicates"] - accounting["unexpected"]) / expected, ""
    if base == "max_lost_share":
        return accounting["lost"] / expected, ""
    failed = accounting["failed_by_class"].get(suffix, 0) if suffix else accounting["failed"]
    return failed / expected, ""
