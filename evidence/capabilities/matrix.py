"""Per-row capability digests and their fold into ``capabilities.json``.

The reduce never re-reads rows (README, guarantee 6): :func:`capability_digest` runs per
attempt and keeps only what the matrix and the report histograms need; :func:`build_capabilities`
and :func:`histogram_values` fold those digests in the reduce.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from evidence.capabilities.dimensions import DIMENSIONS, MEASURES, Outcome
from evidence.capabilities.rollout import rollout_evidence
from evidence.capabilities.values import as_dict, is_number

__all__ = ["STATUS_SYMBOLS", "UNKNOWN_AGENT", "build_capabilities", "capability_digest", "histogram_values"]

STATUS_SYMBOLS: Mapping[str, str] = MappingProxyType({"full": "\u2705", "partial": "\U0001f7e1", "unavailable": "\u274c"})

# Agent key of rows without a string agent_ref.name (brackets: no valid agent name has them).
UNKNOWN_AGENT = "(no agent_ref.name)"

_NO_TRAJECTORY = Outcome(False, False, ("trajectory_unavailable",))


def capability_digest(row: Mapping[str, Any]) -> dict[str, Any]:
    """Reduce one enriched row to what the capability matrix and the report histograms need.

    Args:
        row: the row after collection (``ng_trajectory``, ``ng_model_call_capture``,
            ``ng_agent_observations``, ``ng_perf`` as 0.7.0 leaves them). Never mutated.

    Returns:
        ``{"agent", "dimensions": {dim: {"present", "complete", "gaps"}}, "latency_ms",
        "tokens_per_turn"}``: small, JSON-serialisable, and free of run identity. ``gaps`` is
        empty when the dimension is complete, else the sorted union of the dimension's reason
        codes and the trajectory's 0.7.0 gap codes that bear on it.

    Example:
        >>> capability_digest({"agent_ref": {"name": "a"}})["dimensions"]["sandbox"]
        {'present': False, 'complete': False, 'gaps': ['trajectory_unavailable']}
    """
    ev = rollout_evidence(row)
    dimensions = {}
    for name, (measure, explaining_gaps) in MEASURES.items():
        outcome = measure(ev) if ev.trajectory is not None else _NO_TRAJECTORY
        gaps = [] if outcome.complete else sorted(set(outcome.reasons) | (ev.gap_codes & explaining_gaps))
        dimensions[name] = {"present": outcome.present, "complete": outcome.complete, "gaps": gaps}
    perf = as_dict(row.get("ng_perf"))
    return {
        "agent": _agent_name(row),
        "dimensions": dimensions,
        "latency_ms": _latency_ms(perf),
        "tokens_per_turn": _tokens_per_turn(perf),
    }


def build_capabilities(digests: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Fold digests into the ``capabilities.json`` document, in a deterministic key order.

    Agents are sorted by name, dimensions keep the order of :data:`DIMENSIONS`, gap codes are
    sorted. ``complete`` and ``present`` are fractions of the agent's rollouts (floats);
    ``status`` is ``full`` when every rollout is complete, ``unavailable`` when none is, else
    ``partial``; ``symbol`` is its ✅/🟡/❌; ``gaps`` counts rollouts per shortfall code.
    """
    rollouts: Counter[str] = Counter()
    complete: Counter[tuple[str, str]] = Counter()
    present: Counter[tuple[str, str]] = Counter()
    gaps: dict[tuple[str, str], Counter[str]] = {}
    for digest in digests:
        agent = digest["agent"]
        rollouts[agent] += 1
        for name in DIMENSIONS:
            measured = digest["dimensions"][name]
            complete[agent, name] += measured["complete"]
            present[agent, name] += measured["present"]
            gaps.setdefault((agent, name), Counter()).update(measured["gaps"])
    agents = {
        agent: {
            "rollouts": rollouts[agent],
            "dimensions": {
                name: _entry(complete[agent, name], present[agent, name], rollouts[agent], gaps[agent, name]) for name in DIMENSIONS
            },
        }
        for agent in sorted(rollouts)
    }
    return {"dimensions": list(DIMENSIONS), "agents": agents}


def histogram_values(digests: Iterable[Mapping[str, Any]]) -> dict[str, list[float]]:
    """The per-rollout total latency (ms) and tokens per turn that the report plots."""
    values: dict[str, list[float]] = {"latency_ms": [], "tokens_per_turn": []}
    for digest in digests:
        for key, found in values.items():
            if digest[key] is not None:
                found.append(digest[key])
    return values


def _entry(complete: int, present: int, total: int, gaps: Counter[str]) -> dict[str, Any]:
    status = "full" if complete == total else "unavailable" if complete == 0 else "partial"
    return {
        "status": status,
        "symbol": STATUS_SYMBOLS[status],
        "complete": complete / total,
        "present": present / total,
        "gaps": dict(sorted(gaps.items())),
    }


def _agent_name(row: Mapping[str, Any]) -> str:
    name = as_dict(row.get("agent_ref")).get("name")
    return name if isinstance(name, str) else UNKNOWN_AGENT


def _latency_ms(perf: Mapping[str, Any]) -> float | None:
    value = perf.get("total_latency_ms")
    return float(value) if is_number(value) else None


def _tokens_per_turn(perf: Mapping[str, Any]) -> float | None:
    """perf_summary's tokens per turn (completion tokens / turns), for one rollout.

    None when the ratio overflows: JSON has no infinity, so the digest could not travel in a
    part as itself, and a histogram cannot place it.
    """
    completion, turns = perf.get("completion_tokens"), perf.get("num_turns")
    if is_number(completion) and is_number(turns) and turns > 0:
        ratio = completion / turns
        return ratio if math.isfinite(ratio) else None
    return None
