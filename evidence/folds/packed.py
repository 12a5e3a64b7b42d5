"""A score digest as the aggregate-metrics fold holds it: its values in one tuple, its keys in a shared layout.

The fold holds one entry per main row until the run's documents are made, so an entry's size
is what the flow process grows by per attempt (README, guarantee 6). A ``ScoreDigest`` read
back from the reduce's spill is about 1.3 KB: two tuples of ``(key, value)`` pairs, each pair
a tuple, its keys new strings, and most ``rollout_infos`` values repeating a measure. The rows
of a run share a handful of shapes, so a packed row keeps only its values and points at its
interned ``Layout`` (which measures, which info keys, where each info value comes from): a
fifth of the size, and every attribute the fold reads given back equal to the digest's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from evidence.folds.digest import ROLLOUT_KEY, TASK_KEY, ScoreDigest

__all__ = ["Layouts", "PackedDigest", "pack"]

TASK_SOURCE = -1
ROLLOUT_SOURCE = -2
ROLLOUT_ID_SOURCE = -3
"""Where an info value comes from when not from ``values``: the row's task, its rollout, or ``"<task>:<rollout>"``."""
SHARED_TYPES = (bool, int, float, str, type(None))
"""Values an info entry may share with a measure of the same key: immutable scalars (equal containers may differ inside)."""


@dataclass(frozen=True, slots=True)
class Layout:
    """The shape of packed rows: their measure keys and, per info key, where its value comes from."""

    measures: tuple[str, ...]
    info: tuple[tuple[str, int], ...]  # (key, index into values, or one of the *_SOURCE markers)
    usage_error: str | None


Layouts = dict[Layout, Layout]
"""The fold's interned layouts: one object per shape, shared by every row of that shape."""


class PackedDigest:
    """One main row's score digest, packed (``pack``); ``masked`` is its own mask, ``extra`` the caller's."""

    __slots__ = ("extra", "layout", "masked", "rollout", "task", "values")

    def __init__(self, task: Any, rollout: Any, masked: bool, extra: bool, layout: Layout, values: tuple[Any, ...]) -> None:
        self.task = task
        self.rollout = rollout
        self.masked = masked
        self.extra = extra
        self.layout = layout
        self.values = values

    @property
    def key(self) -> tuple[Any, Any]:
        """The rollout key ``(task, rollout)`` (``ScoreDigest.key``)."""
        return (self.task, self.rollout)

    @property
    def usage_error(self) -> str | None:
        return self.layout.usage_error

    @property
    def measures(self) -> tuple[tuple[str, int | float], ...]:
        """``ScoreDigest.measures``, rebuilt."""
        return tuple(zip(self.layout.measures, self.values, strict=False))

    @property
    def info(self) -> tuple[tuple[str, Any], ...]:
        """``ScoreDigest.info``, rebuilt."""
        return tuple((key, self._source(source)) for key, source in self.layout.info)

    def _source(self, source: int) -> Any:
        if source >= 0:
            return self.values[source]
        if source == TASK_SOURCE:
            return self.task
        if source == ROLLOUT_SOURCE:
            return self.rollout
        return f"{self.task}:{self.rollout}"


def pack(digest: ScoreDigest, extra: bool, layouts: Layouts) -> PackedDigest:
    """``digest`` packed, its layout interned in ``layouts``; ``extra`` is the caller's mask."""
    values = [value for _, value in digest.measures]
    measures = tuple(key for key, _ in digest.measures)
    positions = {key: index for index, key in enumerate(measures)}
    info = []
    for key, value in digest.info:
        if key == "rollout_id" and type(value) is str and value == f"{digest.task}:{digest.rollout}":
            source = ROLLOUT_ID_SOURCE
        elif key == TASK_KEY and _same(value, digest.task):
            source = TASK_SOURCE
        elif key == ROLLOUT_KEY and _same(value, digest.rollout):
            source = ROLLOUT_SOURCE
        elif key in positions and _same(value, values[positions[key]]):
            source = positions[key]
        else:
            source = len(values)
            values.append(value)
        info.append((key, source))
    layout = Layout(measures, tuple(info), digest.usage_error)
    return PackedDigest(digest.task, digest.rollout, digest.masked, extra, layouts.setdefault(layout, layout), tuple(values))


def _same(value: Any, other: Any) -> bool:
    """Whether ``other`` can stand for ``value`` in the output: the same scalar type and value (a zero's sign too)."""
    if type(value) is not type(other) or not isinstance(value, SHARED_TYPES) or value != other:
        return False
    return not isinstance(value, float) or math.copysign(1.0, value) == math.copysign(1.0, other)
