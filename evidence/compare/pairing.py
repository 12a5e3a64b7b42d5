"""Pairing the rollouts of two runs by their identity.

Rollouts pair by key (task, rollout[, stage]). A key can repeat within a run (0.7.0's
duplicate identities, or shards that reuse indices): its n-th occurrence in A pairs with its
n-th occurrence in B, in file order, which is shard order in a sharded run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

__all__ = ["Keyed", "Pairs", "pair_by_key"]


class Keyed(Protocol):
    """Anything with a pairing key and a display label (rollout facts, verdict lines)."""

    @property
    def key(self) -> tuple[str, ...]: ...

    @property
    def label(self) -> str: ...


T = TypeVar("T", bound=Keyed)


@dataclass(frozen=True, slots=True)
class Pairs(Generic[T]):
    """Matched items (in A's order) and the items of each side without a partner."""

    paired: tuple[tuple[T, T], ...]
    only_in_a: tuple[T, ...]
    only_in_b: tuple[T, ...]
    repeated_keys_a: int
    repeated_keys_b: int


def pair_by_key(a: Sequence[T], b: Sequence[T]) -> Pairs[T]:
    """Pair ``a`` with ``b`` by (key, occurrence of that key)."""
    waiting: dict[tuple[tuple[str, ...], int], T] = {}
    seen_b: Counter[tuple[str, ...]] = Counter()
    for item in b:
        waiting[item.key, seen_b[item.key]] = item
        seen_b[item.key] += 1
    seen_a: Counter[tuple[str, ...]] = Counter()
    paired: list[tuple[T, T]] = []
    only_a: list[T] = []
    for item in a:
        partner = waiting.pop((item.key, seen_a[item.key]), None)
        seen_a[item.key] += 1
        if partner is None:
            only_a.append(item)
        else:
            paired.append((item, partner))
    unclaimed = {id(item) for item in waiting.values()}
    return Pairs(
        paired=tuple(paired),
        only_in_a=tuple(only_a),
        only_in_b=tuple(item for item in b if id(item) in unclaimed),
        repeated_keys_a=sum(1 for n in seen_a.values() if n > 1),
        repeated_keys_b=sum(1 for n in seen_b.values() if n > 1),
    )
