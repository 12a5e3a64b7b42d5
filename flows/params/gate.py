"""The quality gate's limits as parameters: the typed form, the ``--gate NAME=VALUE`` names."""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from flows.params.cli import Cli
from flows.params.fields import OptionalShare

SHARE: dict[str, Any] = {"ge": 0.0, "le": 1.0}
_PLAIN_LIMITS = ("min_landed_share", "max_lost_share", "max_failed_share", "max_unhealthy_share", "max_unobserved_share")
LIMIT_NAMES = (*_PLAIN_LIMITS, "max_failed_share.<class>", "min_observed_share.<check>")
"""Every name ``--gate`` takes, as its help and its refusals list them."""


class GateError(ValueError):
    """A quality-gate limit that does not exist or has an unusable value."""


def _health_check_ids() -> tuple[str, ...]:
    from evidence.health.registry import CHECK_IDS  # the evidence library, only when a gate names a check

    return CHECK_IDS


def _known_checks(shares: dict[str, float]) -> dict[str, float]:
    unknown = sorted(set(shares) - set(_health_check_ids()))
    if unknown:
        raise ValueError(f"unknown health check(s): {', '.join(unknown)}")
    return shares


class GateLimits(BaseModel):
    """The quality gate's limits (``evidence.gate`` measures them); every one is off unless set."""

    model_config = ConfigDict(extra="forbid")

    min_landed_share: OptionalShare = Field(default=None, **SHARE, description="Rows that answer an owed rollout, as a share of expected.")
    max_lost_share: OptionalShare = Field(
        default=None, **SHARE, description="Owed rollouts with neither a row nor a sidecar row, as a share of expected."
    )
    max_failed_share: OptionalShare = Field(
        default=None, **SHARE, description="Owed rollouts whose latest sidecar row is a failure, as a share of expected."
    )
    max_failed_share_by_class: dict[str, Annotated[float, Field(**SHARE)]] = Field(
        default_factory=dict, description="Failure class (`_ng_failure_class`) -> the most it may be, as a share of expected."
    )
    max_unhealthy_share: OptionalShare = Field(default=None, **SHARE, description="Unhealthy verdicts, as a share of main rows.")
    max_unobserved_share: OptionalShare = Field(default=None, **SHARE, description="Unobserved verdicts, as a share of main rows.")
    min_observed_share: Annotated[dict[str, Annotated[float, Field(**SHARE)]], AfterValidator(_known_checks)] = Field(
        default_factory=dict,
        description="Health check id -> the least share of rollouts (tasks, for a task check) it must be evaluated on.",
    )

    @property
    def active(self) -> bool:
        return bool(self.named())

    def named(self) -> dict[str, float]:
        """Every set limit by its CLI name (``max_failed_share.<class>``, ``min_observed_share.<check>``)."""
        limits = {name: value for name in _PLAIN_LIMITS if (value := getattr(self, name)) is not None}
        limits.update({f"max_failed_share.{cls}": value for cls, value in self.max_failed_share_by_class.items()})
        limits.update({f"min_observed_share.{check}": value for check, value in self.min_observed_share.items()})
        return limits

    def recorded(self) -> dict[str, Any]:
        """The set limits only, as ``params.json`` records them (an ungated run records none)."""
        return self.model_dump(exclude_defaults=True)


def gate_limits(named: dict[str, float]) -> GateLimits:
    """Limits from ``NAME=VALUE`` pairs as ``--gate`` takes them.

    Raises:
        GateError: an unknown name, a check id that is not a health check, or a value outside [0, 1].
    """
    fields: dict[str, Any] = {"max_failed_share_by_class": {}, "min_observed_share": {}}
    for name, value in named.items():
        base, _, suffix = name.partition(".")
        if base == "min_observed_share" and suffix not in _health_check_ids():
            raise GateError(f"unknown health check in gate limit {name!r} (known: {', '.join(_health_check_ids())})")
        if not ((base in _PLAIN_LIMITS and not suffix) or (base == "max_failed_share" and suffix) or base == "min_observed_share"):
            raise GateError(f"unknown gate limit {name!r} (known: {', '.join(LIMIT_NAMES)})")
        if not 0.0 <= value <= 1.0:
            raise GateError(f"gate limit {name} must be a share between 0 and 1, got {value!r}")
        if not suffix:
            fields[base] = value
        else:
            fields["max_failed_share_by_class" if base == "max_failed_share" else base][suffix] = value
    return GateLimits(**fields)


def gate_pair(text: str) -> tuple[str, float]:
    """``NAME=VALUE`` of one quality-gate limit; the name is checked with the others (:func:`gate_limits`)."""
    name, _, raw = text.partition("=")
    try:
        return name, float(raw)
    except ValueError:
        return name, math.nan  # refused by gate_limits with the limit's name


def _gate_of_pairs(pairs: list[tuple[str, float]]) -> GateLimits:
    return gate_limits(dict(pairs))


GATE_OPTION = Cli(
    dest="gate_limits",
    metavar="NAME=VALUE",
    append=True,
    parse=gate_pair,
    collect=_gate_of_pairs,
    note=f"NAME: {', '.join(LIMIT_NAMES)}; a failing gate exits 3",
)
"""``--gate NAME=VALUE``, once per limit; an unknown name or a value outside [0, 1] stops the run (GateError)."""
