"""A second, independent reading of the comparison's paired bootstrap, for the tests' expected values.

What ``evidence.compare.bootstrap`` promises (its docstring; FORMATS.md, compare.json's "Reward
and perf, per group"): tasks are resampled with replacement, as many as there are, from a fresh
``random.Random(seed)``; each resample's value is the drawn tasks' summed differences over their
pair count; the interval is the central 95 % of 1,000 such values, by perf_summary's quantile
rule (numpy's "linear" percentile). Written here from that description alone (the draws by
``Random.random`` directly, over the tasks in key order as the code lists them, the percentiles
by numpy), so a test that compares against it sees a change to the method, the confidence or
the resample count.

Sums are exact (``math.fsum``) per task and over the drawn tasks, as the description says, so
the figures agree to the last bit rather than to a tolerance.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 1000


def reference_interval(differences: Mapping[str, Sequence[float]], seed: int) -> dict[str, int | float | None]:
    """``pairs``, ``tasks``, ``delta``, ``low``, ``high`` as ``compare.json`` writes an interval."""
    tasks = [values for _, values in sorted(differences.items()) if values]
    totals, counts = [math.fsum(values) for values in tasks], [len(values) for values in tasks]
    pairs = sum(counts)
    if not tasks:
        return {"pairs": 0, "tasks": 0, "delta": None, "low": None, "high": None}
    draw = random.Random(seed).random
    means = np.empty(RESAMPLES)
    for resample in range(RESAMPLES):
        drawn = [math.floor(draw() * len(tasks)) for _ in tasks]  # uniform with replacement, as Random.choices draws
        means[resample] = math.fsum(totals[i] for i in drawn) / sum(counts[i] for i in drawn)
    tail = 100 * (1 - CONFIDENCE) / 2
    low, high = np.percentile(means, [tail, 100 - tail], method="linear")
    return {"pairs": pairs, "tasks": len(tasks), "delta": math.fsum(totals) / pairs, "low": float(low), "high": float(high)}
