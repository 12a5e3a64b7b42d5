"""The per-row health digest: everything the reduce needs about one row, never the row itself.

A digest is computed inside the per-attempt task, stored as JSON next to the attempt's outputs
and read back by the reduce, so it must round-trip through JSON without loss.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

HEALTHY = "healthy"
UNHEALTHY = "unhealthy"
UNOBSERVED = "unobserved"


@dataclass(frozen=True, slots=True)
class RowStats:
    """Statistics of one row; 0.7.0 computes them regardless of ignored checks and gates."""

    capture_observed: bool = False
    policy_calls_observed: bool = False
    successful_model_calls: int = 0
    model_call_errors: int = 0
    errors_by_status: dict[str, int] = field(default_factory=dict)
    ended_on_error: bool = False
    duplicated_calls: int = 0
    transcript_prompt: int = 0
    transcript_completion: int = 0
    capture_prompt: int = 0
    capture_completion: int = 0

    def to_json(self) -> dict[str, Any]:
        """The fields by name, in order (``RowStats(**data)`` restores them)."""
        data = {name: getattr(self, name) for name in _STATS_FIELDS}
        data["errors_by_status"] = dict(self.errors_by_status)
        return data


_STATS_FIELDS = tuple(stat.name for stat in fields(RowStats))


@dataclass(frozen=True, slots=True)
class RowDigest:
    """One row's identity, findings (output form), unobserved check ids and statistics."""

    task: int | str
    rollout: int | str
    stage: int | str | None
    rollout_id: str
    findings: tuple[dict[str, Any], ...]
    unobserved: tuple[str, ...]
    stats: RowStats

    @property
    def verdict(self) -> str:
        """Unhealthy with any finding, else unobserved with any unobserved check, else healthy."""
        if self.findings:
            return UNHEALTHY
        return UNOBSERVED if self.unobserved else HEALTHY

    @property
    def identity_key(self) -> tuple[int | str | None, int | str, int | str]:
        """The duplicate-identity key: (stage, task, rollout) with coerced values."""
        return (self.stage, self.task, self.rollout)

    def with_finding(self, finding: dict[str, Any]) -> RowDigest:
        return replace(self, findings=(*self.findings, finding))

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict; ``from_json`` restores an equal digest.

        Written out rather than ``dataclasses.asdict``, which deep-copies every finding only for
        them to be replaced (and took most of an attempt part's encoding time).
        """
        return {
            "task": self.task,
            "rollout": self.rollout,
            "stage": self.stage,
            "rollout_id": self.rollout_id,
            "findings": list(self.findings),
            "unobserved": list(self.unobserved),
            "stats": self.stats.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RowDigest:
        return cls(
            task=data["task"],
            rollout=data["rollout"],
            stage=data["stage"],
            rollout_id=data["rollout_id"],
            findings=tuple(data["findings"]),
            unobserved=tuple(data["unobserved"]),
            stats=RowStats(**data["stats"]),
        )


def finding(check: str, locator: dict[str, Any] | None, detail: dict[str, Any]) -> dict[str, Any]:
    """A finding in its output form: ``locator`` only when present, ``subject`` never."""
    if locator is None:
        return {"check": check, "detail": detail}
    return {"check": check, "locator": locator, "detail": detail}
