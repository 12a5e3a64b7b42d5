"""Where 0.7.0's health run crashes as a whole, we flag the one row and finish.

Each offending row gets a ``record_unreadable`` finding located like an unreadable line (file
and line) under the same synthetic identity; every other row is reported exactly as 0.7.0
reports the file without that row.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import orjson
import pytest

from evidence.health import evaluate_row, health_check_bytes, reduce_digests
from tests.conformance.conftest import load_cases

HEALTHY_LINE = dict(load_cases("health"))["01_healthy_single"]["rollouts_jsonl"].strip()
PATH = "/jobs/a/rollouts.jsonl"


def _row(**fields: Any) -> dict[str, Any]:
    row = copy.deepcopy(json.loads(HEALTHY_LINE))
    row.update(fields)
    return row


def _verdicts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    data = b"".join(orjson.dumps(row) + b"\n" for row in rows)
    files = health_check_bytes(data, rollouts_path=PATH, output_dir="/out")
    return [json.loads(line) for line in files.rollout_verdicts.splitlines()]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("_ng_task_index", None),
        ("_ng_task_index", 1.5),
        ("_ng_task_index", [1]),
        ("_ng_task_index", 1e20),  # orjson reads a wide integer literal as a float
        ("_ng_rollout_index", None),
        ("_ng_rollout_index", 0.25),
        ("_ng_rollout_index", {"a": 1}),
        ("stage_index", 2.5),
        ("stage_index", [0]),
    ],
)
def test_untypable_identity_flags_only_that_row(field: str, value: Any) -> None:
    good = [_row(_ng_task_index=1), _row(_ng_task_index=2)]
    verdicts = _verdicts([good[0], _row(**{field: value}), good[1]])
    bad = next(v for v in verdicts if str(v["_ng_task_index"]).startswith("__unreadable_record__"))
    assert bad == {
        "_ng_task_index": "__unreadable_record__:input-0:line-2",
        "_ng_rollout_index": 0,
        "rollout_id": "__unreadable_record__:input-0:line-2-0",
        "verdict": "unhealthy",
        "findings": [
            {
                "check": "record_unreadable",
                "locator": {"source_file": PATH, "line": 2},
                "detail": {"reason": "rollout identity is unreadable", "error": "ValidationError", "field": field},
            }
        ],
        "unobserved": bad["unobserved"],
    }
    assert "record_unreadable" not in bad["unobserved"]
    assert len(bad["unobserved"]) == 11
    assert [v for v in verdicts if v is not bad] == _verdicts(good)


def test_identity_crash_row_respects_ignored_record_unreadable() -> None:
    digest = evaluate_row(_row(_ng_task_index=None), source=PATH, line=3, ordinal=0, ignored=("record_unreadable",))
    assert digest.findings == ()
    assert digest.verdict == "unobserved"


def test_wide_integer_identity_is_written_exactly() -> None:
    """orjson cannot write integers beyond 64 bits; the stage's rows may carry them."""
    wide = 2**70
    digest = evaluate_row(_row(_ng_task_index=wide), source=PATH, line=1, ordinal=0, ignored=())
    result = reduce_digests([digest], ())
    assert next(result.verdict_lines()).startswith(f'{{"_ng_task_index":{wide},"_ng_rollout_index":0,')
    assert f'"{wide}": {{' in result.summary_text()
