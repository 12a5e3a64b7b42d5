"""Fuzz: structurally mutated real rows and capture files never break an attempt or a fold.

The mutator (``tests/mutation.py``) starts from every row and capture file of the example job
and the two sample jobs (and the samples' expected rows fed back as input), and swaps value
types, deletes, renames and adds keys, plants huge numbers (2^64, 2^64-1, -2^63-1, 1e308,
-1e308, 5e-324), 200-600 levels of nesting, lone surrogates (in capture lines), odd and empty
strings, duplicated items and keys, truncated and garbage capture lines. Each attempt is
processed as a main row (80%) or a sidecar row, encoded and decoded, its lines parsed; each
batch of 20 goes through the health, perf_summary, capabilities and ATIF folds and the report.

CI runs 3,000 mutated examples in 150 batches (four fixed seeds of 750): 30 s measured on the
2 shared cores of the development machine at load average 5 (10 s of CPU). The campaign
``tests/bench/fuzz_campaign.py`` runs the same examples by the ten thousand. The shapes it
found are kept below as regression cases.
"""

from __future__ import annotations

import random
from collections import Counter

import orjson
import pytest

from evidence import Status
from tests.mutation import CONFIG, Batch, Example, Seed, check_batch, examples, load_seeds

EXAMPLES_PER_SEED = 750
BATCH = 20


@pytest.fixture(scope="module")
def seeds() -> list[Seed]:
    return load_seeds()


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_mutated_attempts_keep_the_contract(seeds: list[Seed], seed: int) -> None:
    statuses: Counter[Status] = Counter()
    for batch in examples(random.Random(seed), seeds, EXAMPLES_PER_SEED, BATCH):
        statuses.update(outcome.status for outcome in check_batch(batch))
    assert statuses[Status.OK] and statuses[Status.REJECTED], "the mutations reach both collection and 0.7.0's refusals"


def _planted(perf: dict) -> Example:
    """A main row without evidence (no trajectory, no capture), so its ``ng_perf`` is kept as given."""
    row = {"_ng_task_index": 0, "_ng_rollout_index": 0, "agent_ref": {"name": "agent"}, "reward": 0.0, "ng_perf": perf}
    return Example(orjson.dumps(row), None, 1)


# Shapes the fuzz campaign found, one per fix: each broke the contract on the old code.
FOUND = {
    # The capability digest's tokens per turn overflowed to inf, which a part writes as null.
    "tokens_per_turn_overflow": [_planted({"completion_tokens": 1e308, "num_turns": 0.5})],
    # The report's latency histogram divided by a bin width that overflowed to inf.
    "latency_span_overflow": [_planted({"total_latency_ms": 1e308}), _planted({"total_latency_ms": -1e308})],
    # ... and by a bin width that underflowed to zero.
    "latency_span_underflow": [_planted({"total_latency_ms": 0.0}), _planted({"total_latency_ms": 5e-324})],
}


@pytest.mark.parametrize("name", sorted(FOUND))
def test_shapes_the_campaign_found_keep_the_contract(name: str) -> None:
    check_batch(Batch(CONFIG, FOUND[name]))
