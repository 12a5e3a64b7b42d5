"""The quality gate's limits as parameters: the typed form, the ``--gate NAME=VALUE`` names."""

from __future__ import annotations

import argparse
import math
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from flows.params.cli import Cli
from flows.params.fields import OptionalShare, blank_is_none

SHARE: dict[str, Any] = {"ge": 0.0, "le": 1.0}
_PLAIN_LIMITS = ("min_landed_share", "max_lost_share", "max_failed_share", "max_unhealthy_share", "max_unobserved_share")
SCORE_LIMITS = ("max_score_shift", "max_score_shift.<metric>", "min_key_metric.<metric>")
"""The limits on ``scores.json``: numbers in the metrics' own units, not shares."""
LIMIT_NAMES = (*_PLAIN_LIMITS, "max_failed_share.<class>", "min_observed_share.<check>", *SCORE_LIMITS)
"""Every name ``--gate`` takes, as its help and its refusals list them."""
KEY_METRIC_PREFIX = "mean/"
"""A key metric of ``scores.json`` is a ``mean/...`` key of 0.7.0's ``key_metrics`` (``mean/reward``)."""

NonNegative = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
OptionalNonNegative = Annotated[float | None, BeforeValidator(blank_is_none), WithJsonSchema({"type": "number", "minimum": 0})]


class GateError(ValueError):
    """A quality-gate limit that does not exist or has an unusable value."""


def _health_check_ids() -> tuple[str, ...]:
    from evidence.health import CHECK_IDS  # the evidence library, only when a gate names a check

    return CHECK_IDS


def _known_checks(shares: dict[str, float]) -> dict[str, float]:
    unknown = sorted(set(shares) - set(_health_check_ids()))
    if unknown:
        raise ValueError(f"unknown health check(s): {', '.join(unknown)}")
    return shares


def is_key_metric(name: str) -> bool:
    """Whether ``name`` can be a key metric of ``scores.json`` (``mean/`` and a field name)."""
    return name.startswith(KEY_METRIC_PREFIX) and len(name) > len(KEY_METRIC_PREFIX)


def _key_metrics(limits: dict[str, float]) -> dict[str, float]:
    wrong = sorted(name for name in limits if not is_key_metric(name))
    if wrong:
        raise ValueError(f"not a key metric (mean/<field>, as in scores.json): {', '.join(wrong)}")
    return limits


class GateLimits(BaseModel):
    """Limits on the run's accounting, health and scores; each is off unless set, and a run that breaks one is still written."""

    # evidence.gate measures them; the class docstring above is the form's text in the Prefect UI.

    model_config = ConfigDict(extra="forbid")

    min_landed_share: OptionalShare = Field(default=None, **SHARE, description="Rows that answer an owed rollout, as a share of expected.")
    max_lost_share: OptionalShare = Field(
        default=None, **SHARE, description="Owed rollouts with neither a row nor a sidecar row, as a share of expected."
    )
    max_failed_share: OptionalShare = Field(
        default=None, **SHARE, description="Owed rollouts whose latest sidecar row is a failure, as a share of expected."
    )
    max_failed_share_by_class: dict[str, Annotated[float, Field(**SHARE)]] = Field(
        default_factory=dict,
        description='Failure class (`_ng_failure_class`) -> the most it may be, as a share of expected, e.g. {"judge_failed": 0.1}.',
        examples=[{"judge_failed": 0.1}],
    )
    max_unhealthy_share: OptionalShare = Field(default=None, **SHARE, description="Unhealthy verdicts, as a share of main rows.")
    max_unobserved_share: OptionalShare = Field(default=None, **SHARE, description="Unobserved verdicts, as a share of main rows.")
    min_observed_share: Annotated[dict[str, Annotated[float, Field(**SHARE)]], AfterValidator(_known_checks)] = Field(
        default_factory=dict,
        description="Health check id -> the least share of rollouts (tasks, for a task check) it must be evaluated on,"
        ' e.g. {"model_call_failed": 0.5}.',
        examples=[{"model_call_failed": 0.5}],
    )
    max_score_shift: OptionalNonNegative = Field(
        default=None,
        ge=0.0,
        allow_inf_nan=False,
        description="The most any key metric of scores.json may move once masked rollouts are left out: |clean - raw|, "
        "in every group (in the metric's own unit).",
    )
    max_score_shift_by_metric: Annotated[dict[str, NonNegative], AfterValidator(_key_metrics)] = Field(
        default_factory=dict, description="Key metric (`mean/reward`) -> the most it may move, |clean - raw|, in every group that has it."
    )
    min_key_metric: Annotated[dict[str, Finite], AfterValidator(_key_metrics)] = Field(
        default_factory=dict, description="Key metric (`mean/reward`) -> the least its clean score may be, in every group that has it."
    )

    @property
    def active(self) -> bool:
        return bool(self.named())

    def named(self) -> dict[str, float]:
        """Every set limit by its CLI name (``max_failed_share.<class>``, ``min_observed_share.<check>``)."""
        limits = {name: value for name in _PLAIN_LIMITS if (value := getattr(self, name)) is not None}
        limits.update({f"max_failed_share.{cls}": value for cls, value in self.max_failed_share_by_class.items()})
        limits.update({f"min_observed_share.{check}": value for check, value in self.min_observed_share.items()})
        if self.max_score_shift is not None:
            limits["max_score_shift"] = self.max_score_shift
        limits.update({f"max_score_shift.{metric}": value for metric, value in self.max_score_shift_by_metric.items()})
        limits.update({f"min_key_metric.{metric}": value for metric, value in self.min_key_metric.items()})
        return limits

    def recorded(self) -> dict[str, Any]:
        """The set limits only, as ``params.json`` records them (an ungated run records none)."""
        return self.model_dump(exclude_defaults=True)


_BY_SUFFIX = {
    "max_failed_share": "max_failed_share_by_class",
    "min_observed_share": "min_observed_share",
    "max_score_shift": "max_score_shift_by_metric",
    "min_key_metric": "min_key_metric",
}
"""``<base>.<suffix>`` limit names -> the field holding them by suffix."""


def gate_limits(named: dict[str, float]) -> GateLimits:
    """Limits from ``NAME=VALUE`` pairs as ``--gate`` takes them.

    Raises:
        GateError: an unknown name, a check id that is not a health check, a metric that is not
            a key metric, a share outside [0, 1], a negative score shift or a key metric's
            limit that is not a finite number.
    """
    fields: dict[str, Any] = {field: {} for field in _BY_SUFFIX.values()}
    for name, value in named.items():
        base, _, suffix = name.partition(".")
        if base == "min_observed_share" and suffix not in _health_check_ids():
            raise GateError(f"unknown health check in gate limit {name!r} (known: {', '.join(_health_check_ids())})")
        if base in ("max_score_shift", "min_key_metric"):
            _check_score_limit(name, base, suffix, value)
        elif not ((base in _PLAIN_LIMITS and not suffix) or (base == "max_failed_share" and suffix) or base == "min_observed_share"):
            raise GateError(f"unknown gate limit {name!r} (known: {', '.join(LIMIT_NAMES)})")
        elif not 0.0 <= value <= 1.0:
            raise GateError(f"gate limit {name} must be a share between 0 and 1, got {value!r}")
        if not suffix:
            fields[base] = value
        else:
            fields[_BY_SUFFIX[base]][suffix] = value
    return GateLimits(**fields)


def _check_score_limit(name: str, base: str, metric: str, value: float) -> None:
    """A limit on scores.json: a key metric where one is named (``min_key_metric`` always names one);
    a shift a non-negative number, a key metric's least value any finite number."""
    if base == "min_key_metric" and not metric:
        raise GateError(f"gate limit {name!r} names no key metric (as min_key_metric.mean/reward)")
    if metric and not is_key_metric(metric):
        raise GateError(f"gate limit {name!r} names no key metric: key metrics are the mean/<field> names of scores.json (mean/reward)")
    if not math.isfinite(value) or (base == "max_score_shift" and value < 0):
        kind = "a non-negative number" if base == "max_score_shift" else "a finite number (in the metric's unit, not a share)"
        raise GateError(f"gate limit {name} must be {kind}, got {value!r}")


def gate_pair(text: str) -> tuple[str, float]:
    """``NAME=VALUE`` of one quality-gate limit; the name is checked with the others (:func:`gate_limits`).

    Raises:
        argparse.ArgumentTypeError: no ``=``, or a value that is not a number (named as given, not as ``nan``).
    """
    name, sep, raw = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if math.isnan(value):
        raise argparse.ArgumentTypeError(f"gate limit {name} needs a number, got {raw!r}")
    return name, value


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
"""``--gate NAME=VALUE``, once per limit; an unknown name or an unusable value (a share outside [0, 1], a
negative score shift) stops the run (GateError)."""
