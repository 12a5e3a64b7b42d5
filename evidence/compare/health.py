"""Health, A against B: verdict transitions, findings per check and who flipped, coverage.

Verdict lines pair by the same key as rows. Counts come from each side's
``quality_summary.json`` (0.7.0's ``run.issues``, ``run.coverage``, ``run.ignored_checks``);
flips come from the verdict lines (rollout checks) and the ``tasks`` flags (task checks).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evidence.capabilities.values import as_dict, as_list
from evidence.compare.model import CheckChange, HealthChange, change, limited
from evidence.compare.pairing import pair_by_key
from evidence.compare.run import RunEvidence
from evidence.report.tables import VERDICTS, verdict_counts

__all__ = ["health_change"]


def health_change(a: RunEvidence, b: RunEvidence) -> HealthChange:
    """Everything the health section shows."""
    verdict_pairs = pair_by_key(a.verdicts, b.verdicts).paired
    transitions = {before: dict.fromkeys(VERDICTS, 0) for before in VERDICTS}
    for x, y in verdict_pairs:
        if x.verdict in transitions and y.verdict in transitions:
            transitions[x.verdict][y.verdict] += 1
    run_a, run_b = _run(a.quality_summary), _run(b.quality_summary)
    issues_a, issues_b = as_dict(run_a.get("issues")), as_dict(run_b.get("issues"))
    tasks_a, tasks_b = _task_flags(a.quality_summary), _task_flags(b.quality_summary)
    shared = [task for task in tasks_a if task in tasks_b]
    checks = {}
    for check in dict.fromkeys([*issues_a, *issues_b]):
        flagged = [y.label for x, y in verdict_pairs if check in y.checks and check not in x.checks]
        cleared = [y.label for x, y in verdict_pairs if check in x.checks and check not in y.checks]
        flagged += [f"task {t}" for t in shared if check in tasks_b[t] and check not in tasks_a[t]]
        cleared += [f"task {t}" for t in shared if check in tasks_a[t] and check not in tasks_b[t]]
        counts = change(_count(a, issues_a, check), _count(b, issues_b, check))
        assert not isinstance(counts.delta, float), "a difference of two counts"
        checks[check] = CheckChange(
            a=counts.a,
            b=counts.b,
            delta=counts.delta,
            flagged=len(flagged),
            cleared=len(cleared),
            flagged_rollouts=limited(flagged),
            cleared_rollouts=limited(cleared),
        )
    coverage_a = as_dict(as_dict(run_a.get("artifacts")).get("coverage"))
    coverage_b = as_dict(as_dict(run_b.get("artifacts")).get("coverage"))
    return HealthChange(
        verdicts={
            name: change(*(verdict_counts(s)[name] if s is not None else None for s in (a.quality_summary, b.quality_summary)))
            for name in VERDICTS
        },
        transitions=transitions,
        paired_verdicts=len(verdict_pairs),
        checks=checks,
        ignored_checks={
            side: [str(c) for c in as_list(run.get("ignored_checks"))] if summary is not None else None
            for side, run, summary in (("a", run_a, a.quality_summary), ("b", run_b, b.quality_summary))
        },
        coverage={check: {"a": coverage_a.get(check), "b": coverage_b.get(check)} for check in dict.fromkeys([*coverage_a, *coverage_b])},
    )


def _run(summary: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return as_dict(as_dict(summary).get("run"))


def _count(side: RunEvidence, issues: Mapping[str, Any], check: str) -> int | None:
    value = issues.get(check)
    return value if side.quality_summary is not None and isinstance(value, int) else None


def _task_flags(summary: Mapping[str, Any] | None) -> dict[str, set[str]]:
    """task key -> the task-level checks that flagged it."""
    return {
        task: {f for f in as_list(as_dict(entry).get("flags")) if isinstance(f, str)}
        for task, entry in as_dict(as_dict(summary).get("tasks")).items()
    }
