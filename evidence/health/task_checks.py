"""Task-scope health checks over a task's *repeats* (its digests collapsed by rollout index).

Each check returns the details of its findings (at most one), or None when the task cannot be
judged (the check is then *unobserved* for that task).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evidence.health.digest import UNHEALTHY, UNOBSERVED, RowDigest


@dataclass(frozen=True, slots=True)
class Repeat:
    """All digests of one (task, rollout index), stages and duplicates merged.

    Built in file order by ``of`` then ``merged``: one verdict if every copy agrees (else
    unobserved), policy calls observed only if observed in every copy, the most successful calls.
    """

    verdict: str
    policy_calls_observed: bool
    successful_model_calls: int

    @classmethod
    def of(cls, digest: RowDigest) -> Repeat:
        return cls(digest.verdict, digest.stats.policy_calls_observed, digest.stats.successful_model_calls)

    def merged(self, digest: RowDigest) -> Repeat:
        calls = digest.stats.successful_model_calls
        return Repeat(
            verdict=self.verdict if digest.verdict == self.verdict else UNOBSERVED,
            policy_calls_observed=self.policy_calls_observed and digest.stats.policy_calls_observed,
            successful_model_calls=max(self.successful_model_calls, calls),
        )


def consistently_unhealthy(repeats: Sequence[Repeat]) -> list[dict[str, Any]] | None:
    """At least two judgeable repeats, all unhealthy (unobserved repeats neither count nor block)."""
    computable = [repeat for repeat in repeats if repeat.verdict != UNOBSERVED]
    if len(computable) < 2:
        return None
    if all(repeat.verdict == UNHEALTHY for repeat in computable):
        return [{"computable_repeats": len(computable)}]
    return []


def no_successful_model_calls(repeats: Sequence[Repeat]) -> list[dict[str, Any]] | None:
    """Every repeat's policy calls were observed and none of them succeeded."""
    if not repeats or not all(repeat.policy_calls_observed for repeat in repeats):
        return None
    if any(repeat.successful_model_calls > 0 for repeat in repeats):
        return []
    return [{"repeats": len(repeats)}]
