"""The ordered table of 0.7.0 rollout health checks, as data.

Order is part of the contract: it drives the order of ``unobserved`` lists, of the coverage and
``issues`` dicts, and of the findings inside a row. Adding a check means writing one function
(``rules.py`` for rollout scope, ``task_checks.py`` for task scope) and adding one entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from evidence.health import rules, task_checks

ROLLOUT = "rollout"
TASK = "task"

# Inputs a check may read; the gates in ``evaluate.py`` decide observability from them.
RECORD = "record"
TRAJECTORY = "trajectory"
AGENT_TURNS = "agent_turns"
BOUND_CALLS = "bound_calls"
OWNED_MODEL_CALLS = "owned_model_calls"
OBSERVED_MODEL_CALLS = "observed_model_calls"
REPEAT_VERDICTS = "repeat_verdicts"
REPEAT_DIGESTS = "repeat_digests"

CALL_BINDING_INPUTS = frozenset({BOUND_CALLS, OWNED_MODEL_CALLS})


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """One registered check: its id, scope, subject, the inputs it reads and its function.

    ``run`` is None for the three record-level checks whose findings come from the runner itself
    (unreadable records, check crashes, duplicate identities) rather than from a rule.
    ``judges_references``: a binding check that is observable as soon as there are references or
    reference-contradiction gaps, instead of needing at least one matched call.
    """

    id: str
    scope: str
    subject: str
    inputs: frozenset[str]
    run: Callable[..., Any] | None
    judges_references: bool = False

    def __post_init__(self) -> None:
        if len(self.inputs & CALL_BINDING_INPUTS) > 1:
            raise ValueError("a health check cannot read both turn-bound and invocation-owned call bindings")


def _spec(check_id: str, scope: str, subject: str, inputs: tuple[str, ...], run: Any, **options: bool) -> CheckSpec:
    return CheckSpec(check_id, scope, subject, frozenset(inputs), run, **options)


_TRAJ = (RECORD, TRAJECTORY)
_TABLE = (
    _spec("check_execution_error", ROLLOUT, "check_execution", (RECORD,), None),
    _spec("record_unreadable", ROLLOUT, "record", (RECORD,), None),
    _spec("rollout_duplicate_identity", ROLLOUT, "rollout", (RECORD,), None),
    _spec("rollout_missing_agent_turns", ROLLOUT, "rollout", (*_TRAJ, AGENT_TURNS), rules.missing_agent_turns),
    _spec("rollout_ended_on_failed_model_call", ROLLOUT, "rollout", (*_TRAJ, OBSERVED_MODEL_CALLS), rules.ended_on_failed_model_call),
    _spec("agent_turn_hollow", ROLLOUT, "agent_turn", (*_TRAJ, AGENT_TURNS), rules.hollow_turns),
    _spec("model_call_zero_completion_tokens", ROLLOUT, "model_call", (*_TRAJ, OWNED_MODEL_CALLS), rules.zero_completion_tokens),
    _spec("model_call_missing_token_counts", ROLLOUT, "model_call", (*_TRAJ, OWNED_MODEL_CALLS), rules.missing_token_counts),
    _spec(
        "trajectory_capture_mismatch",
        ROLLOUT,
        "trajectory_capture",
        (*_TRAJ, OWNED_MODEL_CALLS),
        rules.trajectory_capture_mismatch,
        judges_references=True,
    ),
    _spec("model_call_failed", ROLLOUT, "model_call", (*_TRAJ, OWNED_MODEL_CALLS), rules.failed_model_calls),
    _spec("rollout_token_count_mismatch", ROLLOUT, "rollout", (*_TRAJ, BOUND_CALLS), rules.token_count_mismatch),
    _spec("model_call_runaway_generation", ROLLOUT, "model_call", (*_TRAJ, OWNED_MODEL_CALLS), rules.runaway_generation),
    _spec("task_consistently_unhealthy", TASK, "task", (REPEAT_VERDICTS,), task_checks.consistently_unhealthy),
    _spec("task_no_successful_model_calls", TASK, "task", (REPEAT_DIGESTS,), task_checks.no_successful_model_calls),
)

CHECKS: MappingProxyType[str, CheckSpec] = MappingProxyType({spec.id: spec for spec in _TABLE})
ROLLOUT_CHECKS: tuple[CheckSpec, ...] = tuple(s for s in _TABLE if s.scope == ROLLOUT)
TASK_CHECKS: tuple[CheckSpec, ...] = tuple(s for s in _TABLE if s.scope == TASK)
CHECK_IDS: tuple[str, ...] = tuple(CHECKS)

assert len(CHECKS) == len(_TABLE), "check ids must be unique"
