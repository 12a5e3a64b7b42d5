"""Capability dimensions whose status changed between two runs' ``capabilities.json``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evidence.capabilities import DIMENSIONS
from evidence.capabilities.values import as_dict
from evidence.compare.model import CapabilityChange

__all__ = ["capability_changes"]


def capability_changes(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> list[CapabilityChange]:
    """Per agent (sorted) and dimension (matrix order), every status that differs.

    An agent present in only one run shows its statuses against None.
    """
    agents_a, agents_b = as_dict(as_dict(a).get("agents")), as_dict(as_dict(b).get("agents"))
    changes = []
    for agent in sorted({*agents_a, *agents_b}):
        for dimension in DIMENSIONS:
            entry_a = _entry(agents_a, agent, dimension)
            entry_b = _entry(agents_b, agent, dimension)
            if entry_a.get("status") != entry_b.get("status"):
                changes.append(
                    CapabilityChange(
                        agent=agent,
                        dimension=dimension,
                        a=entry_a.get("status"),
                        b=entry_b.get("status"),
                        a_complete=entry_a.get("complete"),
                        b_complete=entry_b.get("complete"),
                    )
                )
    return changes


def _entry(agents: Mapping[str, Any], agent: str, dimension: str) -> Mapping[str, Any]:
    return as_dict(as_dict(as_dict(agents.get(agent)).get("dimensions")).get(dimension))
