"""Scores, A against B: each group's key metrics (``scores.json``), raw and clean, with paired intervals.

A key metric ``mean/<field>`` is 0.7.0's mean of the field over a group's rollouts, so its
difference is measured rollout by rollout: the pairs (same task and rollout in both runs)
whose two rollouts are in the group, carry the field and are not masked by their own
``mask_sample``, each giving B − A; tasks are resampled as for every other interval
(:func:`evidence.compare.bootstrap.paired_bootstrap`).

The clean side leaves out every pair with an untrustworthy rollout on either side: one whose
health verdict is unhealthy, or one its run's ``score_mask`` names. A difference is called a
change only when its interval excludes zero, and never on a side where untrustworthy pairs took
part (the raw side of a run that has any): such a difference may be the rollouts that did not
measure the model, not the model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evidence.capabilities.values import as_dict
from evidence.compare.bootstrap import paired_bootstrap
from evidence.compare.facts import RolloutFacts
from evidence.compare.groups import paired_differences
from evidence.compare.model import Interval, ScoreChange, ScoreDelta, change
from evidence.compare.pairing import Pairs
from evidence.compare.run import RunEvidence
from evidence.models.run import DEFAULT_SCORE_MASK, SCORE_MASKS

__all__ = ["UNTRUSTWORTHY", "masked_verdicts", "score_changes"]

UNTRUSTWORTHY = "unhealthy"
"""The verdict whose rollouts never take part in a change, whatever the run's score mask."""
KEY_METRIC_PREFIX = "mean/"

Pair = tuple[RolloutFacts, RolloutFacts]


def masked_verdicts(run: RunEvidence) -> frozenset[str]:
    """The verdicts that make a rollout untrustworthy in ``run``: unhealthy, and those its ``score_mask`` names.

    The mask is the manifest's ``parameters.score_mask`` (absent: the default); an unknown mask
    counts as the default.
    """
    mask = run.manifest.parameters.score_mask
    return frozenset((UNTRUSTWORTHY, *SCORE_MASKS.get(mask, SCORE_MASKS[DEFAULT_SCORE_MASK])))


def score_changes(a: RunEvidence, b: RunEvidence, pairs: Pairs[RolloutFacts], seed: int) -> dict[str, dict[str, ScoreChange]]:
    """Group -> key metric -> raw and clean, in the order of A's ``scores.json`` then B's.

    Args:
        a: run A's evidence (its ``scores``, rollouts and verdict lines).
        b: run B's likewise.
        pairs: the rollouts of A and B paired by key.
        seed: the bootstrap seed.
    """
    groups_a, groups_b = _groups(a.scores), _groups(b.scores)
    trusted_a, trusted_b = _trusted(a), _trusted(b)
    changes: dict[str, dict[str, ScoreChange]] = {}
    for group in dict.fromkeys([*groups_a, *groups_b]):
        metrics_a, metrics_b = _metrics(groups_a.get(group)), _metrics(groups_b.get(group))
        inside = [
            (x, y) for x, y in pairs.paired if x.score_group == group and y.score_group == group and not x.self_masked and not y.self_masked
        ]
        trusted = [(x, y) for x, y in inside if trusted_a(x) and trusted_b(y)]
        changes[group] = {
            name: ScoreChange(
                raw=_delta(_figures(metrics_a, metrics_b, name, "raw"), inside, name, len(inside) - len(trusted), seed),
                clean=_delta(_figures(metrics_a, metrics_b, name, "clean"), trusted, name, 0, seed),
            )
            for name in dict.fromkeys([*metrics_a, *metrics_b])
        }
    return changes


def _groups(scores: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return as_dict(as_dict(scores).get("groups"))


def _metrics(group: Any) -> Mapping[str, Any]:
    return as_dict(as_dict(group).get("metrics"))


def _figures(metrics_a: Mapping[str, Any], metrics_b: Mapping[str, Any], name: str, side: str) -> tuple[Any, Any]:
    return as_dict(metrics_a.get(name)).get(side), as_dict(metrics_b.get(name)).get(side)


def _trusted(run: RunEvidence) -> Callable[[RolloutFacts], bool]:
    """Whether a rollout of ``run`` is trustworthy: its verdict line (paired by key, as rows) is not masked.

    A rollout without a verdict line has no verdict, so nothing marks it untrustworthy (as the
    clean scores never mask it).
    """
    untrustworthy = masked_verdicts(run)
    verdicts: dict[tuple[str, ...], list[str]] = {}
    for line in run.verdicts:
        verdicts.setdefault(line.key, []).append(line.verdict)
    seen: Counter[tuple[str, ...]] = Counter()
    flagged = set()
    for row in run.rollouts:  # a key's n-th row has its n-th verdict line, as pairing goes
        lines, occurrence = verdicts.get(row.key, []), seen[row.key]
        seen[row.key] += 1
        if occurrence < len(lines) and lines[occurrence] in untrustworthy:
            flagged.add(id(row))
    return lambda row: id(row) not in flagged


def _delta(figures: tuple[Any, Any], pairs: Sequence[Pair], name: str, untrusted: int, seed: int) -> ScoreDelta:
    interval = paired_bootstrap(paired_differences(pairs, name.removeprefix(KEY_METRIC_PREFIX), _scores), seed)
    called = untrusted == 0 and _excludes_zero(interval)
    return ScoreDelta(scores=change(*figures), paired=interval, untrusted_pairs=untrusted, change=called)


def _scores(rollout: RolloutFacts) -> Mapping[str, float]:
    return rollout.scores


def _excludes_zero(interval: Interval) -> bool:
    return interval.low is not None and interval.high is not None and (interval.low > 0 or interval.high < 0)
