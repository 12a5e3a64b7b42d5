"""Run accounting: 0.7.0's keys, the latest sidecar row, unknown debts, bounded lost-key lists."""

from __future__ import annotations

import pickle
from typing import Any

import orjson
import pytest

from evidence import ShardAccount, accounted_fields, run_accounting


def _row(t: object, r: object, **extra: object) -> dict[str, object]:
    return {"_ng_task_index": t, "_ng_rollout_index": r, **extra}


def test_landed_failed_lost_duplicates_and_unexpected_of_one_shard() -> None:
    account = ShardAccount("a.jsonl", expected_known=True)
    for t in range(5):
        account.expect(_row(t, 0))
    account.expect([1, 2])  # a line that is not an object is owed but has no key
    account.land(_row(0, 0))
    account.land(_row(0.0, False))  # 0.7.0's tuple keys: 0, 0.0 and false are one key
    account.land(_row(9, 0))
    account.fail(_row(0, 0, _ng_failure_class="timeout_exceeded"))  # landed anyway: not failed
    account.fail(_row(1, 0, _ng_failure_class="timeout_exceeded"))
    account.fail(_row(1, 0, _ng_failure_class="judge_failed"))  # the latest row for a key stands
    account.fail(_row(2, 0))
    assert account.summary() == {
        "expected": 6,
        "landed": 3,
        "failed": 2,
        "failed_by_class": {"judge_failed": 1, "unknown": 1},
        "lost": 2,
        "duplicates": 1,
        "unexpected": 1,
        "unreadable_inputs": 1,
    }
    assert account.lost_keys() == [(3, 0), (4, 0)]


def test_a_shard_without_materialized_inputs_has_an_unknown_debt() -> None:
    known, unknown = ShardAccount("a.jsonl", True), ShardAccount("b.jsonl", False)
    known.expect(_row(0, 0))
    unknown.land(_row(0, 0))
    unknown.fail(_row(1, 0, _ng_failure_class="agent_run_error"))
    document = run_accounting([known, unknown])
    assert document["shards"]["b.jsonl"] == {
        "expected": None,
        "landed": 1,
        "failed": 1,
        "failed_by_class": {"agent_run_error": 1},
        "lost": None,
        "duplicates": 0,
        "unexpected": None,
        "unreadable_inputs": 0,
    }
    assert (document["expected"], document["expected_unknown"]) == (None, ["b.jsonl"])
    assert {k: document[k] for k in ("landed", "failed", "lost", "duplicates", "unexpected")} == {
        "landed": 1,
        "failed": 1,
        "lost": None,
        "duplicates": 0,
        "unexpected": None,
    }  # issue 35: unknown stays unknown


def test_lost_keys_are_listed_up_to_the_bound_then_counted() -> None:
    accounts = []
    for name in ("a.jsonl", "b.jsonl"):
        account = ShardAccount(name, True)
        for t in range(3):
            account.expect(_row(t, 1))
        accounts.append(account)
    document = run_accounting(accounts, listed=4)
    assert document["lost_keys"] == [
        {"shard": "a.jsonl", "_ng_task_index": 0, "_ng_rollout_index": 1},
        {"shard": "a.jsonl", "_ng_task_index": 1, "_ng_rollout_index": 1},
        {"shard": "a.jsonl", "_ng_task_index": 2, "_ng_rollout_index": 1},
        {"shard": "b.jsonl", "_ng_task_index": 0, "_ng_rollout_index": 1},
    ]
    assert (document["expected"], document["lost"], document["lost_keys_omitted"]) == (6, 6, 2)


def _deep(depth: int) -> Any:
    """A list nested ``depth`` levels, parsed as a row's field would be (orjson reads 1,024 levels)."""
    return orjson.loads(b"[" * depth + b"0" + b"]" * depth)


@pytest.mark.parametrize("depth", [255, 300, 1000])
def test_an_identity_nested_past_orjsons_writer_is_keyed_and_accounted(depth: int) -> None:
    """Issue 45: a list identity nested 255+ levels made the key's orjson.dumps raise and failed the run."""
    account = ShardAccount("a.jsonl", expected_known=True)
    account.expect(_row(0, _deep(depth)))
    account.expect(_row(1, _deep(depth)))
    account.land(_row(0, _deep(depth)))  # equal values, one key
    account.fail(_row(2, {"b": 1, "a": _deep(depth)}, _ng_failure_class="timeout_exceeded"))
    account.fail(_row(2, {"a": _deep(depth), "b": 1}))  # the same key, its object's members in another order
    summary = account.summary()
    assert {k: summary[k] for k in ("expected", "landed", "failed", "lost", "duplicates", "unexpected")} == {
        "expected": 2,
        "landed": 1,
        "failed": 1,
        "lost": 1,
        "duplicates": 0,
        "unexpected": 0,
    }
    assert summary["failed_by_class"] == {"unknown": 1}
    assert account.lost_keys() == [(1, "[" * depth + "0" + "]" * depth)]


def test_a_failure_class_too_deep_for_str_is_named_by_its_text() -> None:
    """A sidecar's ``_ng_failure_class`` nested past Python's repr limit is named, not raised on."""
    account = ShardAccount("a.jsonl", expected_known=False)
    account.fail(_row(0, 0, _ng_failure_class=_deep(1000)))
    account.fail(_row(1, 0, _ng_failure_class=[1, "x"]))  # str(), as 0.7.0 names it
    assert account.summary()["failed_by_class"] == {"[" * 1000 + "0" + "]" * 1000: 1, "[1, 'x']": 1}


def test_accounted_fields_pickle_at_any_depth_and_stand_in_for_the_row() -> None:
    """A long file's spans are scanned by worker processes, which pickle each row's accounted
    fields back: a 1,000-level identity stopped the pickler (issue 45)."""
    row = _row(_deep(1000), {"a": _deep(1000)}, _ng_failure_class=_deep(1000))
    fields = pickle.loads(pickle.dumps(accounted_fields(row)))
    by_row, by_fields = ShardAccount("a.jsonl", True), ShardAccount("a.jsonl", True)
    for account, stand_in in ((by_row, row), (by_fields, fields)):
        account.expect(row)
        account.land(stand_in)
        account.fail(stand_in)
    assert by_fields.summary() == by_row.summary() == {**by_row.summary(), "expected": 1, "landed": 1, "lost": 0, "unexpected": 0}
