"""The comparison of two runs as typed, frozen values; ``compare.json`` is their JSON form.

Every figure is a pair "A, B" plus the difference where one makes sense, so a reader never
has to look up which side a number came from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AtifChange",
    "CapabilityChange",
    "Change",
    "CheckChange",
    "Comparison",
    "GroupChange",
    "HealthChange",
    "Interval",
    "PairingCounts",
    "ReasonChange",
    "ScoreChange",
    "ScoreDelta",
    "Side",
    "TrustIssue",
    "TrustReport",
    "change",
    "limited",
    "same",
]

LIST_LIMIT = 20
"""At most this many rollout labels are listed per list; its count field gives the whole."""


@dataclass(frozen=True, slots=True)
class Change:
    """One figure in A and in B; ``delta`` = B − A when both are numbers, else None."""

    a: Any
    b: Any
    delta: float | int | None


@dataclass(frozen=True, slots=True)
class Side:
    """Who a side is and what its own evidence says about its trustworthiness."""

    run_dir: str
    job_id: str | None
    run_id: str | None
    config_fingerprint: str | None
    gate: str
    landed_share: float | None


@dataclass(frozen=True, slots=True)
class PairingCounts:
    """How the two runs' rollouts matched up."""

    paired: int
    only_in_a: int
    only_in_b: int
    repeated_keys_a: int
    repeated_keys_b: int
    only_in_a_rollouts: list[str]
    only_in_b_rollouts: list[str]


@dataclass(frozen=True, slots=True)
class CheckChange:
    """One health check: its finding counts (``run.issues``) and the rollouts that flipped.

    ``flagged`` rollouts have a finding of this check in B and none in A; ``cleared`` the
    reverse. Task-level checks flip per task (``task <t>``).
    """

    a: int | None
    b: int | None
    delta: int | None
    flagged: int
    cleared: int
    flagged_rollouts: list[str]
    cleared_rollouts: list[str]


@dataclass(frozen=True, slots=True)
class HealthChange:
    """Verdicts, findings, ignored checks and coverage, A against B."""

    verdicts: dict[str, Change]
    transitions: dict[str, dict[str, int]]
    paired_verdicts: int
    checks: dict[str, CheckChange]
    ignored_checks: dict[str, list[str] | None]
    coverage: dict[str, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Interval:
    """A paired bootstrap interval of the mean of B − A over the pairs that have the metric."""

    pairs: int
    tasks: int
    delta: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True, slots=True)
class GroupChange:
    """One perf_summary group (or the whole run): rollouts, reward, models and perf, A vs B."""

    rollouts: Change
    paired: int
    regrouped: int
    rewards_changed: int
    mean_reward: Change
    models: dict[str, list[str]]
    perf: dict[str, Change]
    intervals: dict[str, Interval]


@dataclass(frozen=True, slots=True)
class ScoreDelta:
    """One key metric of one group, raw or clean, B against A.

    ``scores`` are the two runs' own ``scores.json`` figures (0.7.0's means over each run's
    rollouts). ``paired`` is the paired bootstrap interval of B − A over the rollouts both runs
    have, per rollout of the metric's field; ``untrusted_pairs`` are the pairs in it with an
    untrustworthy rollout on either side (none on the clean side, which leaves them out).
    ``change``: the difference is called a change, because its interval excludes zero and no
    untrusted pair took part.
    """

    scores: Change
    paired: Interval
    untrusted_pairs: int
    change: bool


@dataclass(frozen=True, slots=True)
class ScoreChange:
    """One key metric of one group (``mean/reward``), raw and clean."""

    raw: ScoreDelta
    clean: ScoreDelta


@dataclass(frozen=True, slots=True)
class CapabilityChange:
    """A capability dimension whose status differs between the runs (None: agent absent)."""

    agent: str
    dimension: str
    a: str | None
    b: str | None
    a_complete: float | None
    b_complete: float | None


@dataclass(frozen=True, slots=True)
class ReasonChange:
    """An ATIF refusal reason whose number of rows changed."""

    reason: str
    a: int
    b: int


@dataclass(frozen=True, slots=True)
class AtifChange:
    """ATIF acceptance, A against B."""

    accepted: Change
    rejected: Change
    reasons: list[ReasonChange]
    newly_rejected: int
    newly_accepted: int
    newly_rejected_rollouts: list[str]
    newly_accepted_rollouts: list[str]


@dataclass(frozen=True, slots=True)
class TrustIssue:
    """One reason not to take the comparison at face value."""

    code: str
    side: str | None
    detail: str


@dataclass(frozen=True, slots=True)
class TrustReport:
    """``trusted`` when no issue was found."""

    trusted: bool
    issues: list[TrustIssue]


@dataclass(frozen=True, slots=True)
class Comparison:
    """Everything ``compare.json`` holds.

    ``status`` is ``no change`` when ``changed`` (the sections that differ) is empty. ``scores``
    is group -> key metric -> :class:`ScoreChange` (``scores.json``'s groups of either run).
    """

    status: str
    changed: list[str]
    a: Side
    b: Side
    trust: TrustReport
    pairing: PairingCounts
    scores: dict[str, dict[str, ScoreChange]]
    health: HealthChange
    run: GroupChange
    groups: dict[str, GroupChange]
    capabilities: list[CapabilityChange]
    atif: AtifChange
    bootstrap: dict[str, Any] = field(default_factory=dict)


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values with strict types: ``1``, ``1.0`` and ``true`` differ."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def change(a: Any, b: Any) -> Change:
    """A :class:`Change` with B − A when both are numbers (bools are not)."""
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
    return Change(a=a, b=b, delta=b - a if numbers else None)


def limited(labels: list[str]) -> list[str]:
    """The first :data:`LIST_LIMIT` labels."""
    return labels[:LIST_LIMIT]
