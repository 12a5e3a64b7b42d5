"""The comparison's tables as plain data, rendered alike as ``compare.md`` and ``compare.html``."""

from __future__ import annotations

from evidence.compare.model import Change, Comparison, GroupChange, Interval
from evidence.report.tables import VERDICTS, Table, format_value

__all__ = [
    "atif_table",
    "capability_table",
    "checks_table",
    "coverage_table",
    "group_table",
    "pairing_table",
    "reasons_table",
    "scores_table",
    "sides_table",
    "transition_table",
    "trust_table",
    "verdict_table",
]

_INTERVAL_LABELS = {
    "reward": "reward",
    "prompt_tokens": "prompt tokens",
    "completion_tokens": "completion tokens",
    "total_latency_ms": "total latency (ms)",
}


def _change_row(label: str, value: Change) -> tuple[str, ...]:
    return (label, format_value(value.a), format_value(value.b), format_value(value.delta))


def sides_table(comparison: Comparison) -> Table:
    """Which runs are compared, and their own trust facts."""
    a, b = comparison.a, comparison.b
    rows = [
        ("run directory", a.run_dir, b.run_dir),
        ("job", format_value(a.job_id), format_value(b.job_id)),
        ("run", format_value(a.run_id), format_value(b.run_id)),
        ("config fingerprint", format_value(a.config_fingerprint), format_value(b.config_fingerprint)),
        ("quality gate", a.gate, b.gate),
        ("landed share", _share(a.landed_share), _share(b.landed_share)),
    ]
    return Table(("", "A", "B"), tuple(rows))


def trust_table(comparison: Comparison) -> Table:
    """Each reason not to trust the comparison."""
    rows = tuple((i.code, (i.side or "").upper(), i.detail) for i in comparison.trust.issues)
    return Table(("Issue", "Side", "Detail"), rows)


def pairing_table(comparison: Comparison) -> Table:
    """Paired and unpaired rollouts (the first unpaired ones named)."""
    p = comparison.pairing
    rows = (
        ("paired", format_value(p.paired), ""),
        ("only in A", format_value(p.only_in_a), ", ".join(p.only_in_a_rollouts)),
        ("only in B", format_value(p.only_in_b), ", ".join(p.only_in_b_rollouts)),
        ("repeated keys in A", format_value(p.repeated_keys_a), ""),
        ("repeated keys in B", format_value(p.repeated_keys_b), ""),
    )
    return Table(("Rollouts", "Count", "First ones"), rows)


def scores_table(comparison: Comparison) -> Table:
    """Each group's key metrics, raw then clean: both runs' scores, the paired interval, whether it is a change."""
    rows = tuple(
        (
            group,
            metric,
            side,
            format_value(delta.scores.a),
            format_value(delta.scores.b),
            format_value(delta.scores.delta),
            _interval(delta.paired),
            format_value(delta.untrusted_pairs),
            "yes" if delta.change else "no",
        )
        for group, metrics in comparison.scores.items()
        for metric, entry in metrics.items()
        for side, delta in (("raw", entry.raw), ("clean", entry.clean))
    )
    return Table(("Group", "Key metric", "Scores", "A", "B", "\u0394", "Paired \u0394 (B \u2212 A)", "Untrusted pairs", "Change"), rows)


def verdict_table(comparison: Comparison) -> Table:
    """Rollouts per verdict, A vs B."""
    return Table(("Verdict", "A", "B", "\u0394"), tuple(_change_row(n, c) for n, c in comparison.health.verdicts.items()))


def transition_table(comparison: Comparison) -> Table:
    """Paired rollouts by verdict in A (rows) and in B (columns)."""
    matrix = comparison.health.transitions
    rows = tuple((f"A {before}", *(format_value(matrix[before][after]) for after in VERDICTS)) for before in VERDICTS)
    return Table(("", *(f"B {after}" for after in VERDICTS)), rows)


def checks_table(comparison: Comparison) -> Table:
    """Findings per check, A vs B, with the rollouts that flipped (checks with no finding left out)."""
    rows = tuple(
        (
            check,
            format_value(c.a),
            format_value(c.b),
            format_value(c.delta),
            format_value(c.flagged),
            ", ".join(c.flagged_rollouts),
            format_value(c.cleared),
            ", ".join(c.cleared_rollouts),
        )
        for check, c in comparison.health.checks.items()
        if c.a or c.b or c.flagged or c.cleared
    )
    return Table(("Check", "A", "B", "\u0394", "Flagged in B", "Rollouts", "Cleared in B", "Rollouts"), rows)


def coverage_table(comparison: Comparison) -> Table:
    """Ignored checks, then each check's coverage (evaluated/unobserved/ignored), side by side."""
    ignored = comparison.health.ignored_checks
    rows = [("ignored checks", _names(ignored["a"]), _names(ignored["b"]))]
    rows += [(check, _coverage(c["a"]), _coverage(c["b"])) for check, c in comparison.health.coverage.items()]
    counts = "evaluated / unobserved / ignored"
    return Table(("Check", f"A: {counts}", f"B: {counts}"), tuple(rows))


def group_table(group: GroupChange) -> Table:
    """One group: rollouts, mean reward, models, the paired intervals, then perf_summary."""
    rows = [
        _change_row("rollouts", group.rollouts),
        ("paired rollouts", "", "", format_value(group.paired)),
        ("pairs whose group changed", "", "", format_value(group.regrouped)),
        ("pairs whose reward changed", "", "", format_value(group.rewards_changed)),
        _change_row("mean reward", group.mean_reward),
        ("models", ", ".join(group.models["a"]), ", ".join(group.models["b"]), ""),
    ]
    rows += [(f"paired \u0394 {_INTERVAL_LABELS[m]}", "", "", _interval(i)) for m, i in group.intervals.items()]
    rows += [_change_row(name, value) for name, value in group.perf.items()]
    return Table(("Figure", "A", "B", "\u0394 (B \u2212 A)"), tuple(rows))


def capability_table(comparison: Comparison) -> Table:
    """Capability dimensions whose status changed."""
    rows = tuple(
        (c.agent, c.dimension, format_value(c.a), format_value(c.b), format_value(c.a_complete), format_value(c.b_complete))
        for c in comparison.capabilities
    )
    return Table(("Agent", "Dimension", "A", "B", "A complete", "B complete"), rows)


def atif_table(comparison: Comparison) -> Table:
    """ATIF files and refusals, A vs B, with the rollouts that moved."""
    atif = comparison.atif
    rows = (
        _change_row("accepted", atif.accepted),
        _change_row("rejected", atif.rejected),
        ("newly rejected in B", "", ", ".join(atif.newly_rejected_rollouts), format_value(atif.newly_rejected)),
        ("newly accepted in B", "", ", ".join(atif.newly_accepted_rollouts), format_value(atif.newly_accepted)),
    )
    return Table(("Rows", "A", "B", "\u0394"), rows)


def reasons_table(comparison: Comparison) -> Table:
    """Refusal reasons whose number of rows changed."""
    rows = tuple((r.reason, format_value(r.a), format_value(r.b), format_value(r.b - r.a)) for r in comparison.atif.reasons)
    return Table(("Reason", "A", "B", "\u0394"), rows)


def _interval(interval: Interval) -> str:
    if interval.delta is None:
        return "no pairs"
    return (
        f"{format_value(interval.delta)} [{format_value(interval.low)}, {format_value(interval.high)}] "
        f"({interval.pairs} pairs, {interval.tasks} tasks)"
    )


def _share(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.1%}"


def _names(value: list[str] | None) -> str:
    return "\u2014" if value is None else ", ".join(value) or "none"


def _coverage(value: object) -> str:
    if not isinstance(value, dict):
        return "\u2014"
    return " / ".join(format_value(value.get(k)) for k in ("evaluated", "unobserved", "ignored"))
