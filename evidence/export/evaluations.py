"""A rollout's reward and health verdict as OpenTelemetry ``gen_ai.evaluation.result`` events.

The GenAI semantic conventions (development status) define the event as the result of
evaluating GenAI output, to be parented to the span of the operation evaluated: here the
rollout's root ``invoke_agent`` span, at its end. Its attributes: ``gen_ai.evaluation.name``
(required), ``gen_ai.evaluation.score.value`` and ``gen_ai.evaluation.score.label`` (each when
it applies) and ``gen_ai.evaluation.explanation`` (recommended). A rollout gets at most two:

* ``reward``: ``score.value`` is the row's ``reward`` (a boolean counts 1 or 0, as the scores
  count it); none when the row has no numeric reward.
* ``health``: ``score.label`` is its verdict (``healthy``, ``unhealthy``, ``unobserved``), the
  explanation its most frequent checks (``check (n)``, at most three, then how many more); none
  when the run has no verdict line for the row.

Rows and verdict lines meet by 0.7.0's health identity (task, rollout, stage as its digest
coerces them), a repeated identity's n-th row taking its n-th line, as the lines are sorted stably.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evidence.capabilities.values import finite_float
from evidence.health.identity import InvalidIdentity, record_identity
from evidence.report.scores import checks_text, masked_rollout

__all__ = ["EVALUATION_EVENT", "EventModel", "RolloutVerdict", "RolloutVerdicts", "evaluation_events"]

EVALUATION_EVENT = "gen_ai.evaluation.result"

IdentityKey = tuple[Any, Any, Any]


@dataclass(frozen=True, slots=True)
class EventModel:
    """One span event as the wire needs it; its time in Unix nanoseconds, ``None`` when unknown."""

    name: str
    time_ns: int | None
    attributes: Mapping[str, str | float]


@dataclass(frozen=True, slots=True)
class RolloutVerdict:
    """What a trace shows of a rollout's verdict line: the verdict, and its checks as text (None: no findings)."""

    verdict: str
    explanation: str | None


class RolloutVerdicts:
    """A run's verdict lines (``health/rollout_verdicts.jsonl``), each handed to its row once.

    Holds one small entry per line, not the lines.

    Example::

        verdicts = RolloutVerdicts(json.loads(line) for line in verdict_file)
        verdict = verdicts.take(row, ordinal=line_no - 1)
    """

    def __init__(self, lines: Iterable[Mapping[str, Any]]) -> None:
        self._by_identity: dict[IdentityKey, deque[RolloutVerdict]] = {}
        for line in lines:
            key = (line.get("_ng_task_index"), line.get("_ng_rollout_index"), line.get("stage_index"))
            entry = masked_rollout(line)
            explanation = checks_text(entry) if entry.findings else None
            self._by_identity.setdefault(key, deque()).append(RolloutVerdict(entry.verdict, explanation))

    def take(self, row: Mapping[str, Any], ordinal: int) -> RolloutVerdict | None:
        """The verdict of ``row``, the ``ordinal``-th (0-based) row of ``rollouts.jsonl``; None when it has no line left."""
        try:
            identity = record_identity(dict(row), ordinal)
        except InvalidIdentity:
            return None
        waiting = self._by_identity.get((identity.task, identity.rollout, identity.stage))
        return waiting.popleft() if waiting else None


def evaluation_events(row: Mapping[str, Any], verdict: RolloutVerdict | None, time_ns: int | None) -> tuple[EventModel, ...]:
    """The ``reward`` and ``health`` evaluation events of one row (either may be absent)."""
    events = []
    reward = finite_float(row.get("reward"))
    if reward is not None:
        events.append(EventModel(EVALUATION_EVENT, time_ns, {"gen_ai.evaluation.name": "reward", "gen_ai.evaluation.score.value": reward}))
    if verdict is not None:
        attributes: dict[str, str | float] = {"gen_ai.evaluation.name": "health", "gen_ai.evaluation.score.label": verdict.verdict}
        if verdict.explanation is not None:
            attributes["gen_ai.evaluation.explanation"] = verdict.explanation
        events.append(EventModel(EVALUATION_EVENT, time_ns, attributes))
    return tuple(events)
