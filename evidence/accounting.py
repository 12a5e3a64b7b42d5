"""Run accounting: what a job owed against what landed, failed or was lost, per shard and in total.

In 0.7.0's terms (``coverage/expected``, ``coverage/scored``, ``coverage/missing``): a shard owes
one rollout per line of its ``<stem>_materialized_inputs.jsonl``, keyed as 0.7.0 keys them,
``(_ng_task_index, _ng_rollout_index)`` within the shard (separate runs number their tasks from
0, so one shard's row never answers another shard's debt). A key landed when the shard's
rollouts file has a row for it; failed when it did not land and the shard's failures sidecar
has a row for it (the sidecar's last row for a key stands, classed by ``_ng_failure_class``);
lost when it has neither, which is what a walltime kill leaves. A shard without materialized
inputs has an unknown debt: ``expected`` is None and nothing is guessed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable
from typing import Any

from evidence.jsonl import deep_retry, key_text

TASK_KEY = "_ng_task_index"
ROLLOUT_KEY = "_ng_rollout_index"
FAILURE_CLASS_KEY = "_ng_failure_class"
UNKNOWN_CLASS = "unknown"  # 0.7.0's class for a sidecar row without one
LOST_KEYS_LISTED = 100  # lost keys named in accounting.json; the rest are counted

RolloutKey = tuple[Hashable, Hashable]


def accounted_fields(row: dict[str, Any]) -> dict[str, Any]:
    """What the accounting reads of a row, already keyed: a row's stand-in for ``land`` and ``fail``.

    Flat (scalars and key texts), so it pickles whatever the row held: discovery's workers send
    it back from a long file's spans, and pickle stops near 1,000 levels.
    """
    return {TASK_KEY: _hashable(row.get(TASK_KEY)), ROLLOUT_KEY: _hashable(row.get(ROLLOUT_KEY)), FAILURE_CLASS_KEY: _failure_class(row)}


def rollout_key(row: dict[str, Any]) -> RolloutKey:
    """``(task, rollout)`` as 0.7.0 compares them (``row.get``; ``1``, ``1.0`` and ``true`` are one key).

    A list or object value, which 0.7.0 could not hash, is keyed by its JSON text, however deep
    (``evidence.jsonl.key_text``).
    """
    return _hashable(row.get(TASK_KEY)), _hashable(row.get(ROLLOUT_KEY))


def _hashable(value: Any) -> Hashable:
    return key_text(value) if isinstance(value, (list, dict)) else value


def _failure_class(row: dict[str, Any]) -> str:
    """A sidecar row's ``_ng_failure_class`` as 0.7.0 names it (``str()``, ``unknown`` when falsy),
    also when it is nested past the default recursion limit (a row parses to 1,024 levels)."""
    value = row.get(FAILURE_CLASS_KEY) or UNKNOWN_CLASS
    return deep_retry(lambda: str(value))


class ShardAccount:
    """The fold of one shard: its debt (when known), its main rows and its sidecar rows, in file order."""

    def __init__(self, name: str, expected_known: bool) -> None:
        self.name = name
        self.expected: int | None = 0 if expected_known else None
        self.unreadable_inputs = 0
        self._owed: dict[RolloutKey, None] = {}  # insertion-ordered: lost keys are listed in inventory order
        self._landed: Counter[RolloutKey] = Counter()
        self._failures: dict[RolloutKey, str] = {}

    def expect(self, row: Any) -> None:
        """One line of the materialized inputs (parsed; a non-object is owed but has no key)."""
        assert self.expected is not None, "expect() on a shard without materialized inputs"
        self.expected += 1
        if isinstance(row, dict):
            self._owed.setdefault(rollout_key(row), None)
        else:
            self.unreadable_inputs += 1

    def land(self, row: dict[str, Any]) -> None:
        """One main row of the shard's rollouts file."""
        self._landed[rollout_key(row)] += 1

    def fail(self, row: dict[str, Any]) -> None:
        """One row of the shard's failures sidecar; a later row for the same key replaces an earlier one."""
        key = rollout_key(row)
        self._failures.pop(key, None)  # re-inserted: "latest" is also the order they are listed in
        self._failures[key] = _failure_class(row)

    def lost_keys(self) -> list[RolloutKey]:
        """Owed keys with neither a main row nor a sidecar row, in inventory order."""
        return [key for key in self._owed if key not in self._landed and key not in self._failures]

    def summary(self) -> dict[str, Any]:
        """This shard's counts (``lost`` and ``unexpected`` None when the debt is unknown)."""
        by_class = Counter(cls for key, cls in self._failures.items() if key not in self._landed)
        known = self.expected is not None
        return {
            "expected": self.expected,
            "landed": sum(self._landed.values()),
            "failed": sum(by_class.values()),
            "failed_by_class": dict(sorted(by_class.items())),
            "lost": len(self.lost_keys()) if known else None,
            "duplicates": sum(n - 1 for n in self._landed.values()),
            "unexpected": sum(n for key, n in self._landed.items() if key not in self._owed) if known else None,
            "unreadable_inputs": self.unreadable_inputs,
        }


def run_accounting(accounts: Iterable[ShardAccount], listed: int = LOST_KEYS_LISTED, *, subset: bool = False) -> dict[str, Any]:
    """The ``accounting.json`` document: totals, the shards whose debt is unknown, each shard, lost keys.

    A subset run's accounts hold only the rows it selected, and no debt (a subset owes nothing):
    its document says ``"scope": "subset"``, so no reader takes its counts for the job's.

    A total ``expected`` is None as soon as one shard's debt is unknown (a sum would claim a
    debt nobody recorded), and so are ``lost`` and ``unexpected``, which are measured against
    that debt (``lost: 0`` would say nothing was lost); the other totals add what is known.
    """
    shards: dict[str, dict[str, Any]] = {}
    lost: list[dict[str, Any]] = []
    lost_count = 0
    for account in accounts:
        shards[account.name] = account.summary()
        for task, rollout in account.lost_keys():
            lost_count += 1
            if len(lost) < listed:
                lost.append({"shard": account.name, TASK_KEY: task, ROLLOUT_KEY: rollout})
    values = list(shards.values())
    unknown = [name for name, shard in shards.items() if shard["expected"] is None]
    by_class: Counter[str] = Counter()
    for shard in values:
        by_class.update(shard["failed_by_class"])
    scope = {"scope": "subset"} if subset else {}  # a full run's document is what it always was
    return {
        **scope,
        "expected": None if unknown or not values else sum(s["expected"] for s in values),
        "landed": sum(s["landed"] for s in values),
        "failed": sum(s["failed"] for s in values),
        "lost": None if unknown else sum(s["lost"] for s in values),
        "duplicates": sum(s["duplicates"] for s in values),
        "unexpected": None if unknown else sum(s["unexpected"] for s in values),
        "failed_by_class": dict(sorted(by_class.items())),
        "expected_unknown": unknown,
        "shards": shards,
        "lost_keys": lost,
        "lost_keys_omitted": lost_count - len(lost),
    }
