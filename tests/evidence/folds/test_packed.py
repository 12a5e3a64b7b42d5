"""A packed score digest (what the aggregate-metrics fold holds per row) gives back the digest's values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from evidence import ScoreDigest, score_digest
from evidence.folds.packed import Layouts, PackedDigest, pack

GOLDEN = orjson.loads((Path(__file__).parents[2] / "data" / "aggregate_metrics_0_7_0.json").read_bytes())["cases"]


def unpacked(packed: PackedDigest) -> tuple[Any, ...]:
    return (packed.task, packed.rollout, packed.key, packed.masked, packed.measures, packed.info, packed.usage_error)


def fields(digest: ScoreDigest) -> tuple[Any, ...]:
    return (digest.task, digest.rollout, digest.key, digest.masked, digest.measures, digest.info, digest.usage_error)


def typed(value: Any) -> Any:
    """A value with its floats' signs and every type spelled out, so equal-but-different values differ."""
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, *(typed(item) for item in value))
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)


@pytest.mark.parametrize("case", GOLDEN, ids=[case["name"] for case in GOLDEN])
def test_every_golden_row_packs_to_its_own_values(case: dict[str, Any]) -> None:
    layouts: Layouts = {}
    for row in case["rows"]:
        digest = score_digest(row)
        if digest is not None:
            assert typed(unpacked(pack(digest, False, layouts))) == typed(fields(digest))


def test_info_values_that_only_equal_a_measure_keep_their_own_type_and_sign() -> None:
    row = {
        "_ng_task_index": 3,
        "_ng_rollout_index": 1.0,
        "agent_ref": {"name": "a"},
        "reward": -0.0,
        "score": [0.0],
        "input_tokens": 5,
        "cached_tokens": -0.0,
        "response": {"usage": {"input_tokens": 5.0, "cached_tokens": 0.0}},
    }
    digest = score_digest(row)
    assert digest is not None
    packed = pack(digest, True, {})
    assert typed(unpacked(packed)) == typed(fields(digest))
    assert packed.extra


def test_rows_of_one_shape_share_one_layout_and_other_shapes_get_their_own() -> None:
    layouts: Layouts = {}
    rows = [{"_ng_task_index": t, "_ng_rollout_index": 0, "agent_ref": {"name": "a"}, "reward": t / 7} for t in range(5)]
    packed = [pack(d, False, layouts) for d in map(score_digest, rows) if d is not None]
    assert len({id(p.layout) for p in packed}) == 1
    odd = ScoreDigest("a", "a", 1, 2, False, (("reward", 1),), (("rollout_id", "x"), ("_ng_task_index", 9), ("reward", 1.0)))
    assert typed(unpacked(pack(odd, False, layouts))) == typed(fields(odd))
    assert len(layouts) == 2
