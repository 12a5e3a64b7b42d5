"""The per-row score digest: what aggregate metrics read about one main row, never the row.

0.7.0 aggregates a group's rows after stripping the heavy fields (``response`` down to its
``usage`` and ``incomplete_details``, ``responses_create_params``, ``ng_agent_observations``,
``ng_model_call_capture``, ``ng_trajectory``). What survives into its numbers is small: the
row's server group and agent name, its ``(task, rollout)`` key, the mask flag, the numeric
top-level fields merged with ``response.usage`` (bools count as 0/1) and the raw ``reward``.
A digest holds exactly that, computed once per main row by the per-attempt engine, so the
reduce never needs the row again and holds a few numbers per rollout.

Two orders of those numbers exist in 0.7.0, and both are kept because each one reaches the
output: the profiler's columns let ``response.usage`` override a top-level field of the same
name (``measures``), while a rollout's ``rollout_infos`` entry lets the top-level field win
(``info``). The two are equal for every row a real environment writes.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

__all__ = ["HEAVY_FIELDS", "MASK_FIELD", "ROLLOUT_KEY", "TASK_KEY", "ScoreDigest", "score_digest"]

TASK_KEY = "_ng_task_index"
ROLLOUT_KEY = "_ng_rollout_index"
SERVER_KEY = "_ng_environment_server"
MASK_FIELD = "mask_sample"
"""A truthy value marks a rollout whose reward is not a measurement (0.7.0's ``mask_sample``)."""
HEAVY_FIELDS = ("response", "responses_create_params", "ng_agent_observations", "ng_model_call_capture", "ng_trajectory")
"""Removed before aggregation (of ``response`` only ``usage`` and ``incomplete_details`` stay)."""

Scalar = str | int | float | bool


@dataclass(frozen=True, slots=True)
class ScoreDigest:
    """One main row as aggregate metrics see it (small, picklable, JSON round-trips).

    Attributes:
        server: the group: ``_ng_environment_server`` when it is a string, else the agent name.
        agent: the row's ``agent_ref.name`` when it is a JSON scalar, else None (labels use it).
        task, rollout: the raw index values, 0 when the field is absent (as 0.7.0 reads them).
        masked: the row's own ``mask_sample`` is truthy.
        measures: the profiler's numeric columns, in 0.7.0's column order.
        info: the row's ``rollout_infos`` entry, in 0.7.0's key order.
        usage_error: the type name of a ``response.usage`` that is truthy but not an object
            (0.7.0 raises ``AttributeError`` on it when the row is scored).
    """

    server: Scalar
    agent: Scalar | None
    task: Any
    rollout: Any
    masked: bool
    measures: tuple[tuple[str, int | float], ...]
    info: tuple[tuple[str, Any], ...]
    usage_error: str | None = None

    @property
    def key(self) -> tuple[Any, Any]:
        """The rollout key ``(task, rollout)`` 0.7.0 aligns, deduplicates and sorts by."""
        return (self.task, self.rollout)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (pairs become two-item arrays); :meth:`from_json` restores an equal digest."""
        data = {field.name: getattr(self, field.name) for field in fields(self)}
        data["measures"] = [list(pair) for pair in self.measures]
        data["info"] = [list(pair) for pair in self.info]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScoreDigest:
        pairs = {name: tuple((key, value) for key, value in data[name]) for name in ("measures", "info")}
        return cls(**{**data, **pairs})


def score_digest(row: dict[str, Any]) -> ScoreDigest | None:
    """The digest of one main row, or None when the row belongs to no group.

    A row belongs to the group its ``_ng_environment_server`` string names, else to its agent
    name (when truthy); a row with neither is not aggregated, as in the oracle.

    Example::

        digest = score_digest({"_ng_task_index": 3, "_ng_rollout_index": 1, "reward": True,
                               "agent_ref": {"name": "simple_agent"}})
        digest.server, digest.measures  # ("simple_agent", (("reward", 1),))
    """
    agent = _agent_name(row)
    stamp = row.get(SERVER_KEY)
    if isinstance(stamp, str):
        server: Scalar = stamp
    elif agent:
        server = agent
    else:
        return None
    kept = {key: value for key, value in row.items() if key not in HEAVY_FIELDS and key != MASK_FIELD}
    usage, usage_error = _usage(row.get("response"))
    task, rollout = row.get(TASK_KEY, 0), row.get(ROLLOUT_KEY, 0)
    return ScoreDigest(
        server=server,
        agent=agent,
        task=task,
        rollout=rollout,
        masked=bool(row.get(MASK_FIELD)),
        measures=_measures(kept, usage),
        info=_info(kept, usage, task, rollout),
        usage_error=usage_error,
    )


def _agent_name(row: dict[str, Any]) -> Scalar | None:
    reference = row.get("agent_ref")
    name = reference.get("name") if isinstance(reference, dict) else None
    return name if isinstance(name, (str, int, float)) else None


def _usage(response: Any) -> tuple[dict[str, Any], str | None]:
    """``response.usage`` as the profiler reads it: falsy is empty, a non-object is an error."""
    usage = response.get("usage") if isinstance(response, dict) else None
    if not usage:
        return {}, None
    if not isinstance(usage, dict):
        return {}, type(usage).__name__
    return usage, None


def _number(value: Any) -> int | float | None:
    """A value the profiler counts as a number (bools as 0/1), else None."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    return None


def _measures(kept: dict[str, Any], usage: dict[str, Any]) -> tuple[tuple[str, int | float], ...]:
    # The stripped row always carries a (non-numeric) ``response`` last; usage values then
    # override fields of the same name in place and append the rest.
    merged = {**kept, "response": None, **usage}
    pairs = ((key, _number(value)) for key, value in merged.items() if not key.startswith("_"))
    return tuple((key, number) for key, number in pairs if number is not None)


def _info(kept: dict[str, Any], usage: dict[str, Any], task: Any, rollout: Any) -> tuple[tuple[str, Any], ...]:
    info: dict[str, Any] = {"rollout_id": f"{task}:{rollout}", TASK_KEY: task, ROLLOUT_KEY: rollout}
    if "reward" in kept:
        info["reward"] = kept["reward"]
    for key, value in usage.items():
        if (number := _number(value)) is not None:
            info[key] = number
    for key, value in kept.items():
        if key.startswith("_") or key in ("reward", "response"):
            continue
        if (number := _number(value)) is not None:
            info[key] = number
    return tuple(info.items())
