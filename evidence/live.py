"""A running job's live status: what is in flight, what stalled, and whether the job has ended.

NeMo Gym 0.7.0 writes a job's evidence as it goes (``<stem>_materialized_inputs.jsonl`` first,
each rollout's capture while it runs, its row the moment it completes, ``<stem>_aggregate_metrics.json``
last), so a follower can tell, between two looks, which owed rollouts are still working: a
materialized rollout with no row yet is *in flight* while its capture changed within the stall
limit, *stalled* once its capture has been still for longer, and *waiting* while it has no
capture (not dispatched yet). This module decides that, and when the job is over, from facts
its caller hands in (times as seconds since the epoch, never read here): ``live.json``
(FORMATS.md) is its document.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = [
    "LISTED_ROLLOUTS",
    "SETTLE_SECONDS",
    "EndReason",
    "LiveStatus",
    "Outstanding",
    "answered_accounting",
    "capture_activity",
    "end_of_job",
    "outstanding_rollouts",
    "unhealthy_share",
]

LISTED_ROLLOUTS = 100
"""In-flight and stalled rollouts named in ``live.json`` and the report, each list; the rest are counted."""

SETTLE_SECONDS = 2.0
"""Quiet time (no new line, no capture change) before "every materialized rollout answered" ends a job:
a capture can gain its last line after its row (seen 160 ms late on a real 0.7.0 job)."""

_RETRY = re.compile(r"-a\d+$")
_CAPTURE_SUFFIX = ".capture.jsonl"


class EndReason(str, Enum):  # noqa: UP042  # str() is shown in live.json and the log
    """Why a followed job is considered over."""

    aggregate_metrics = "aggregate_metrics"  # the producer's end-of-job file appeared
    all_answered = "all_answered"  # every materialized rollout has a row or a sidecar row
    idle_timeout = "idle_timeout"  # no new line for the idle limit: reported as such, not as a finished job


@dataclass(frozen=True, slots=True)
class Outstanding:
    """One owed rollout without a row, and how long ago its capture last changed."""

    rollout: str
    idle_s: float

    def document(self) -> dict[str, Any]:
        return {"rollout": self.rollout, "idle_s": round(self.idle_s, 1)}


def capture_activity(captures: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Latest change per rollout from (capture file name, modification time) pairs.

    A retried attempt's capture (``<task>-<rollout>-aN``, 0.7.0's name for it) is activity of its
    rollout; names that are not capture files are left out.
    """
    latest: dict[str, float] = {}
    for name, changed in captures:
        if not name.endswith(_CAPTURE_SUFFIX):
            continue
        rollout = _RETRY.sub("", name[: -len(_CAPTURE_SUFFIX)])
        latest[rollout] = max(changed, latest.get(rollout, changed))
    return latest


def outstanding_rollouts(
    unanswered: Iterable[str], activity: Mapping[str, float], now: float, stall_after: float
) -> tuple[list[Outstanding], list[Outstanding], int]:
    """(in flight, stalled, waiting) of the owed rollouts (capture ids) that have neither a row nor a sidecar row.

    In flight while the capture changed within ``stall_after`` seconds of ``now``, stalled
    after; waiting without a capture. Each list longest-idle first.
    """
    in_flight: list[Outstanding] = []
    stalled: list[Outstanding] = []
    waiting = 0
    for rollout in unanswered:
        changed = activity.get(rollout)
        if changed is None:
            waiting += 1
            continue
        idle = max(now - changed, 0.0)
        (in_flight if idle <= stall_after else stalled).append(Outstanding(rollout, idle))
    in_flight.sort(key=_idle_first)
    stalled.sort(key=_idle_first)
    return in_flight, stalled, waiting


def _idle_first(item: Outstanding) -> tuple[float, str]:
    return -item.idle_s, item.rollout


def end_of_job(
    *, end_file: bool, expected: int | None, outstanding: int, quiet_s: float, idle_s: float, idle_timeout: float
) -> EndReason | None:
    """Whether the followed job is over, and why.

    Args:
        end_file: the producer's end-of-job file (``<stem>_aggregate_metrics.json``) exists.
        expected: rollouts the materialized inputs owe (None: unknown, some shard has none).
        outstanding: owed rollouts with neither a row nor a sidecar row.
        quiet_s: seconds since anything of the job last changed (a line, a capture).
        idle_s: seconds since the last new line of a rollouts file or sidecar.
        idle_timeout: the follow's idle limit.
    """
    if end_file:
        return EndReason.aggregate_metrics
    if expected and not outstanding and quiet_s >= SETTLE_SECONDS:
        return EndReason.all_answered
    if idle_s >= idle_timeout:
        return EndReason.idle_timeout
    return None


def unhealthy_share(verdicts: Mapping[str, int]) -> float | None:
    """The share of main rows judged unhealthy (None before any verdict)."""
    total = sum(verdicts.values())
    return verdicts.get("unhealthy", 0) / total if total else None


def answered_accounting(accounting: Mapping[str, Any]) -> dict[str, Any]:
    """An accounting document as it stands mid-job: what is owed is what has been answered so far.

    A live gate measures the debt shares (``min_landed_share``, ``max_failed_share``, ...) over
    the rollouts that have a row or a sidecar row; the others are not lost, only not done.
    """

    def answered(counts: Mapping[str, Any]) -> dict[str, Any]:
        return {**counts, "expected": counts["landed"] + counts["failed"], "lost": 0, "unexpected": 0}

    shards = {name: answered(shard) for name, shard in accounting.get("shards", {}).items()}
    return {**answered(accounting), "expected_unknown": [], "shards": shards, "lost_keys": [], "lost_keys_omitted": 0}


@dataclass(frozen=True)
class LiveStatus:
    """The ``live.json`` document of one snapshot (FORMATS.md, "live.json")."""

    snapshot_at: str  # ISO 8601, UTC, formatted by the caller
    rows: int
    failures: int
    expected: int | None
    in_flight: list[Outstanding] = field(default_factory=list)
    stalled: list[Outstanding] = field(default_factory=list)
    waiting: int = 0
    unhealthy_share: float | None = None
    done: bool = False
    ended: EndReason | None = None
    gate_breached: bool = False

    def document(self) -> dict[str, Any]:
        return {
            "snapshot_at": self.snapshot_at,
            "rows": self.rows,
            "failures": self.failures,
            "expected": self.expected,
            "in_flight": len(self.in_flight),
            "stalled": len(self.stalled),
            "waiting": self.waiting,
            "unhealthy_share": self.unhealthy_share,
            "done": self.done,
            "ended": self.ended.value if self.ended is not None else None,
            "gate_breached": self.gate_breached,
            "in_flight_rollouts": [item.document() for item in self.in_flight[:LISTED_ROLLOUTS]],
            "stalled_rollouts": [item.document() for item in self.stalled[:LISTED_ROLLOUTS]],
        }

    def counts(self) -> dict[str, Any]:
        """The figures an event carries (no lists)."""
        document = self.document()
        return {
            key: document[key] for key in ("rows", "failures", "expected", "in_flight", "stalled", "waiting", "unhealthy_share", "done")
        }
