"""A paired bootstrap over tasks: how sure is a difference of means between two runs?

Rollouts of one task share its difficulty, so tasks, not rollouts, are resampled: each
resample draws as many tasks as there are, with replacement, and takes the mean of B − A over
the pairs of the drawn tasks. The interval is the central 95 % of those means (percentile
method, with perf_summary's quantile). A fresh ``random.Random(seed)`` per interval makes the
file reproducible and keeps one interval independent of which others were computed.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

from evidence.compare.model import Interval
from evidence.perf_summary import quantile

__all__ = ["CONFIDENCE", "RESAMPLES", "paired_bootstrap"]

RESAMPLES = 1000
CONFIDENCE = 0.95


def paired_bootstrap(differences: Mapping[str, Sequence[float]], seed: int, resamples: int = RESAMPLES) -> Interval:
    """The interval of the mean difference, from each task's paired differences (B − A).

    Args:
        differences: task -> the differences of its pairs (tasks without pairs are left out).
        seed: the random seed; the same seed and input give the same interval.
        resamples: how many bootstrap resamples are drawn.

    The interval has no figures (``delta``, ``low`` and ``high`` None) when there are no pairs, or
    when a sum leaves the range of a double (rewards of ``1e308`` on one side and ``-1e308`` on
    the other): such a mean is no measurement, and the comparison goes on without it.
    """
    counted = [values for _, values in sorted(differences.items()) if values]
    pairs, tasks = sum(len(values) for values in counted), len(counted)
    try:
        return _interval([(math.fsum(values), len(values)) for values in counted], pairs, seed, resamples)
    except (OverflowError, ValueError):  # fsum: a finite sum too large, or inf and -inf together
        return Interval(pairs=pairs, tasks=tasks, delta=None, low=None, high=None)


def _interval(cells: list[tuple[float, int]], pairs: int, seed: int, resamples: int) -> Interval:
    """The interval over each task's (sum of differences, pairs).

    Raises:
        OverflowError, ValueError: ``math.fsum`` met a sum no double holds.
    """
    if not cells:
        return Interval(pairs=0, tasks=0, delta=None, low=None, high=None)
    delta = math.fsum(total for total, _ in cells) / pairs
    rng = random.Random(seed)
    means = []
    for _ in range(resamples):
        drawn = rng.choices(cells, k=len(cells))
        means.append(math.fsum(total for total, _ in drawn) / sum(count for _, count in drawn))
    tail = (1 - CONFIDENCE) / 2
    return Interval(pairs=pairs, tasks=len(cells), delta=delta, low=quantile(means, tail), high=quantile(means, 1 - tail))
