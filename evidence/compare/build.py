"""``compare_runs``: two runs' evidence in, one :class:`Comparison` out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import orjson

from evidence.capabilities.values import as_dict
from evidence.compare.atif import atif_change
from evidence.compare.bootstrap import CONFIDENCE, RESAMPLES
from evidence.compare.capabilities import capability_changes
from evidence.compare.facts import RolloutFacts
from evidence.compare.groups import group_change
from evidence.compare.health import health_change
from evidence.compare.model import (
    AtifChange,
    CapabilityChange,
    Change,
    Comparison,
    GroupChange,
    HealthChange,
    PairingCounts,
    ScoreChange,
    Side,
    limited,
    same,
)
from evidence.compare.pairing import Pairs, pair_by_key
from evidence.compare.run import RunEvidence
from evidence.compare.scores import score_changes
from evidence.compare.trust import side_of, trust_report

__all__ = ["NO_CHANGE", "compare_runs", "comparison_json"]

NO_CHANGE, CHANGED = "no change", "changed"


def compare_runs(a: RunEvidence, b: RunEvidence, *, seed: int = 0) -> Comparison:
    """Compare run B against run A (B − A in every difference).

    Args:
        a: the earlier (or reference) run's evidence.
        b: the run compared with it.
        seed: the bootstrap seed: the same runs and seed give the same comparison.
    """
    pairs = pair_by_key(a.rollouts, b.rollouts)
    health = health_change(a, b)
    run = group_change(a.rollouts, b.rollouts, pairs.paired, _regrouped(pairs), _perf(a, b, "run"), seed)
    groups = {name: _group(name, a, b, pairs, seed) for name in _group_names(a, b)}
    capabilities = capability_changes(a.capabilities, b.capabilities)
    atif = atif_change(a, b)
    scores = score_changes(a, b, pairs, seed)
    sides = (side_of(a), side_of(b))
    changed = _changed_sections(pairs, scores, health, (run, *groups.values()), capabilities, atif, sides)
    return Comparison(
        status=CHANGED if changed else NO_CHANGE,
        changed=changed,
        a=sides[0],
        b=sides[1],
        trust=trust_report(sides, (a, b), capabilities),
        pairing=PairingCounts(
            paired=len(pairs.paired),
            only_in_a=len(pairs.only_in_a),
            only_in_b=len(pairs.only_in_b),
            repeated_keys_a=pairs.repeated_keys_a,
            repeated_keys_b=pairs.repeated_keys_b,
            only_in_a_rollouts=limited([r.label for r in pairs.only_in_a]),
            only_in_b_rollouts=limited([r.label for r in pairs.only_in_b]),
        ),
        scores=scores,
        health=health,
        run=run,
        groups=groups,
        capabilities=capabilities,
        atif=atif,
        bootstrap={"seed": seed, "resamples": RESAMPLES, "confidence": CONFIDENCE, "unit": "task"},
    )


def _changed_sections(
    pairs: Pairs[RolloutFacts],
    scores: dict[str, dict[str, ScoreChange]],
    health: HealthChange,
    groups: Sequence[GroupChange],
    capabilities: Sequence[CapabilityChange],
    atif: AtifChange,
    sides: tuple[Side, Side],
) -> list[str]:
    """The sections in which B differs from A, in page order (empty: no change)."""
    differs = {
        "pairing": bool(pairs.only_in_a or pairs.only_in_b),
        "scores": any(side.change for metrics in scores.values() for entry in metrics.values() for side in (entry.raw, entry.clean)),
        "health": _health_differs(health),
        "rewards": any(g.rewards_changed or not _same_change(g.mean_reward) for g in groups),
        "perf": any(not _same_change(c) for g in groups for c in g.perf.values()),
        "models": any(g.models["a"] != g.models["b"] for g in groups),
        "capabilities": bool(capabilities),
        "atif": _atif_differs(atif),
        "config": sides[0].config_fingerprint != sides[1].config_fingerprint,
    }
    return [name for name, changed in differs.items() if changed]


def comparison_json(comparison: Comparison) -> bytes:
    """``compare.json``: indent 2, keys in model order, a final newline (same input, same bytes)."""
    return orjson.dumps(asdict(comparison), option=orjson.OPT_INDENT_2) + b"\n"


def _group_names(a: RunEvidence, b: RunEvidence) -> list[str]:
    """perf_summary's groups of either run, plus any group a row names (sorted)."""
    names = {*as_dict(as_dict(a.perf_summary).get("groups")), *as_dict(as_dict(b.perf_summary).get("groups"))}
    return sorted(names | {r.group for r in (*a.rollouts, *b.rollouts)})


def _perf(a: RunEvidence, b: RunEvidence, *path: str) -> tuple[Any, Any]:
    def lookup(run: RunEvidence) -> Any:
        value: Any = run.perf_summary
        for part in path:
            value = as_dict(value).get(part)
        return value

    return lookup(a), lookup(b)


def _group(name: str, a: RunEvidence, b: RunEvidence, pairs: Pairs[RolloutFacts], seed: int) -> GroupChange:
    inside = [(x, y) for x, y in pairs.paired if x.group == name and y.group == name]
    straddling = sum(1 for x, y in pairs.paired if (x.group == name) != (y.group == name))
    return group_change(_in(a.rollouts, name), _in(b.rollouts, name), inside, straddling, _perf(a, b, "groups", name), seed)


def _in(rollouts: Sequence[RolloutFacts], group: str) -> list[RolloutFacts]:
    return [r for r in rollouts if r.group == group]


def _regrouped(pairs: Pairs[RolloutFacts]) -> int:
    return sum(1 for x, y in pairs.paired if x.group != y.group)


def _same_change(value: Change) -> bool:
    return same(value.a, value.b)


def _health_differs(health: HealthChange) -> bool:
    moved = any(n for before, row in health.transitions.items() for after, n in row.items() if before != after)
    return (
        moved
        or any(not _same_change(c) for c in health.verdicts.values())
        or any(c.flagged or c.cleared or not same(c.a, c.b) for c in health.checks.values())
        or not same(health.ignored_checks["a"], health.ignored_checks["b"])
        or any(not same(c["a"], c["b"]) for c in health.coverage.values())
    )


def _atif_differs(atif: AtifChange) -> bool:
    return bool(
        not _same_change(atif.accepted) or not _same_change(atif.rejected) or atif.reasons or atif.newly_rejected or atif.newly_accepted
    )
