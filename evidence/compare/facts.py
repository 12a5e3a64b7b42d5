"""The few facts of one rollout a comparison needs, taken from a run's rows and verdict lines.

A run's ``rollouts.jsonl`` rows can be megabytes each (captures, trajectories); a comparison
keeps only the pairing key, the perf group, the reward, the ``ng_perf`` numbers it tests, the
models the calls reached and the numbers the scores are means of, so two large runs fit in
memory side by side.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evidence.capabilities.values import as_dict, dicts, finite_float
from evidence.folds.digest import score_digest
from evidence.jsonl import deep_retry
from evidence.perf_summary import perf_group

__all__ = ["METRICS", "RolloutFacts", "VerdictFacts", "rollout_facts", "verdict_facts"]

METRICS = ("reward", "prompt_tokens", "completion_tokens", "total_latency_ms")
"""The per-rollout numbers compared pair by pair (the reward, then ``ng_perf`` fields)."""

RolloutKey = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RolloutFacts:
    """One main row of a run, reduced to what a comparison reads.

    Attributes:
        key: the pairing key (see :func:`rollout_key`).
        task: the task part of the key: the unit the bootstrap resamples.
        label: the rollout as people write it, ``<task>-<rollout>`` (``@<stage>`` when staged).
        group: the row's perf_summary group.
        values: metric name -> number, for the :data:`METRICS` the row has as numbers.
        models: the models its captured calls reached, sorted.
        score_group: the aggregate-metrics group the row is scored in (``scores.json``'s key:
            ``evidence.ScoreDigest.server`` as text), None for a row in no group.
        scores: field -> number, the row's numeric columns as 0.7.0's aggregate metrics read
            them (``mean/<field>`` is their mean), finite ones only.
        self_masked: the row's own ``mask_sample`` is truthy (0.7.0 leaves it out of every score).
    """

    key: RolloutKey
    task: str
    label: str
    group: str
    values: Mapping[str, float]
    models: tuple[str, ...]
    score_group: str | None = None
    scores: Mapping[str, float] = field(default_factory=dict)
    self_masked: bool = False


@dataclass(frozen=True, slots=True)
class VerdictFacts:
    """One line of ``health/rollout_verdicts.jsonl``: its key, verdict and the checks that fired."""

    key: RolloutKey
    label: str
    verdict: str
    checks: frozenset[str]


def rollout_key(record: Mapping[str, Any]) -> RolloutKey:
    """(``_ng_task_index``, ``_ng_rollout_index``[, ``stage_index``]) as JSON texts.

    JSON texts keep types apart (``1``, ``1.0``, ``"1"`` and ``true`` are different tasks), as
    the stage compares rows; the standard encoder writes integers of any width. ``stage_index``,
    the third part of 0.7.0's rollout identity, takes part only where present, as in the verdict
    file.
    """
    parts = [record.get("_ng_task_index"), record.get("_ng_rollout_index")]
    if record.get("stage_index") is not None:
        parts.append(record["stage_index"])
    return tuple(json.dumps(part, sort_keys=True, ensure_ascii=False) for part in parts)


def _label(key: RolloutKey) -> str:
    texts = [part[1:-1] if part.startswith('"') else part for part in key]
    return "-".join(texts[:2]) + (f"@{texts[2]}" if len(texts) > 2 else "")


def rollout_facts(row: dict[str, Any]) -> RolloutFacts:
    """The facts of one enriched main row (its group is the one perf_summary puts it in), also of
    one whose values are nested past the default recursion limit (``evidence.jsonl.deep_retry``)."""
    return deep_retry(lambda: _rollout_facts(row))


def _rollout_facts(row: dict[str, Any]) -> RolloutFacts:
    perf = as_dict(row.get("ng_perf"))
    sources = {"reward": row.get("reward"), **{name: perf.get(name) for name in METRICS[1:]}}
    values = {name: number for name, value in sources.items() if (number := _as_float(value)) is not None}
    calls = dicts(as_dict(row.get("ng_model_call_capture")).get("calls"))
    models = tuple(sorted({call["model"] for call in calls if isinstance(call.get("model"), str)}))
    key = rollout_key(row)
    digest = score_digest(row)
    return RolloutFacts(
        key=key,
        task=key[0],
        label=_label(key),
        group=perf_group(row),
        values=values,
        models=models,
        score_group=None if digest is None else str(digest.server),
        scores={} if digest is None else {name: number for name, value in digest.measures if (number := _as_float(value)) is not None},
        self_masked=digest is not None and digest.masked,
    )


def _as_float(value: Any) -> float | None:
    """A finite number as a float (not a boolean); an integer beyond the float range counts as no value."""
    return None if isinstance(value, bool) else finite_float(value)


def verdict_facts(line: Mapping[str, Any]) -> VerdictFacts:
    """The facts of one verdict line (0.7.0's ``rollout_verdicts.jsonl`` layout), at any depth."""
    return deep_retry(lambda: _verdict_facts(line))


def _verdict_facts(line: Mapping[str, Any]) -> VerdictFacts:
    key = rollout_key(line)
    checks = frozenset(f["check"] for f in dicts(line.get("findings")) if isinstance(f.get("check"), str))
    verdict = line.get("verdict")
    return VerdictFacts(key=key, label=_label(key), verdict=verdict if isinstance(verdict, str) else "", checks=checks)
