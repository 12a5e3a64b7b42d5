"""Reward and perf per perf_summary group (and for the whole run), A against B.

A group's figures come from its rollouts on each side (mean reward, models reached) and from
each side's ``perf_summary.json`` (every statistic 0.7.0 computes); its intervals come from
the pairs whose two rollouts are both in the group. A pair whose rollout changed group (a
renamed environment server) is counted as ``regrouped`` and left out of both groups' pairs.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from evidence.capabilities.values import as_dict
from evidence.compare.bootstrap import paired_bootstrap
from evidence.compare.facts import METRICS, RolloutFacts
from evidence.compare.model import GroupChange, change

__all__ = ["group_change", "paired_differences"]

Pair = tuple[RolloutFacts, RolloutFacts]


def group_change(
    a: Sequence[RolloutFacts],
    b: Sequence[RolloutFacts],
    pairs: Sequence[Pair],
    regrouped: int,
    perf: tuple[Mapping[str, Any] | None, Mapping[str, Any] | None],
    seed: int,
) -> GroupChange:
    """The figures of one group from its rollouts on each side and the pairs inside it.

    Args:
        a: the group's rollouts in run A; ``b`` likewise in run B.
        pairs: the pairs whose two rollouts are both in the group.
        regrouped: pairs with one rollout in the group and the other elsewhere.
        perf: the group's perf_summary statistics in A and in B (None: not in that run).
        seed: the bootstrap seed.
    """
    perf_a, perf_b = as_dict(perf[0]), as_dict(perf[1])
    statistics_order = list(dict.fromkeys([*perf_a, *perf_b]))
    return GroupChange(
        rollouts=change(len(a), len(b)),
        paired=len(pairs),
        regrouped=regrouped,
        rewards_changed=sum(1 for x, y in pairs if x.values.get("reward") != y.values.get("reward")),
        mean_reward=change(_mean(r.values.get("reward") for r in a), _mean(r.values.get("reward") for r in b)),
        models={"a": _models(a), "b": _models(b)},
        perf={name: change(perf_a.get(name), perf_b.get(name)) for name in statistics_order},
        intervals={metric: paired_bootstrap(paired_differences(pairs, metric, _values), seed) for metric in METRICS},
    )


def _mean(values: Iterable[float | None]) -> float | None:
    """The mean of the values present; None without any, or when their sum leaves the range of a double."""
    present = [v for v in values if v is not None]
    try:
        return statistics.fmean(present) if present else None
    except OverflowError:  # two rewards of 1e308: no mean a double holds
        return None


def _models(rollouts: Sequence[RolloutFacts]) -> list[str]:
    return sorted({model for rollout in rollouts for model in rollout.models})


def paired_differences(pairs: Sequence[Pair], name: str, numbers: Callable[[RolloutFacts], Mapping[str, float]]) -> dict[str, list[float]]:
    """task -> B − A of ``name`` over the pairs where both rollouts have it among their ``numbers``
    (:attr:`RolloutFacts.values`, :attr:`RolloutFacts.scores`)."""
    by_task: dict[str, list[float]] = {}
    for x, y in pairs:
        before, after = numbers(x), numbers(y)
        if name in before and name in after:
            by_task.setdefault(x.task, []).append(after[name] - before[name])
    return by_task


def _values(rollout: RolloutFacts) -> Mapping[str, float]:
    return rollout.values
