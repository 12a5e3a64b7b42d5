"""``scores.json``: each group's headline metrics as 0.7.0 reports them, raw against clean.

The raw document is 0.7.0's own ``_aggregate_metrics.json`` (only the environment's
``mask_sample`` masks); the clean one also masks the rollouts whose health verdict is
unhealthy. Putting the two side by side shows how much a score moves once rollouts that did
not measure the model are left out. Every number is copied from those documents; nothing is
recomputed, so an interval exists exactly where 0.7.0 computed one.

Shape (groups in the documents' order, keyed by server; a number 0.7.0 could not write, such
as an overflowed mean, is ``null`` like in the documents)::

    {"groups": {"<server>": {
        "agent": "<label>",
        "masked_rollouts": {"raw": 0, "clean": 3},
        "metrics": {"mean/reward": {
            "raw": 0.61, "clean": 0.66, "difference": 0.05,
            "raw_ci95": [0.52, 0.70], "clean_ci95": [0.57, 0.75]}}}}}

* ``metrics``: the ``mean/...`` keys of each document's ``key_metrics`` (raw's first, then any
  only the clean one has); ``difference`` is clean - raw, null unless both are numbers.
* ``*_ci95``: the 95 % t interval across repeats, ``[ci_low_95_across_repeats/<metric>,
  ci_high_95_across_repeats/<metric>]`` of ``agent_metrics``; null with a single repeat.
* ``masked_rollouts``: ``coverage/masked_rollouts`` (0 when the document has no coverage keys).
* A group a document leaves out (0.7.0 raises on it) has nulls on that side.
* A server that is not a string (an agent name that is a number) is keyed by its text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from evidence.capabilities.values import finite_float
from evidence.folds.aggregate_metrics import server_order
from evidence.folds.digest import ScoreDigest

__all__ = ["build_scores", "key_metrics", "reward_values"]

CI_LOW, CI_HIGH = "ci_low_95_across_repeats/", "ci_high_95_across_repeats/"


def build_scores(raw: list[dict[str, Any]], clean: list[dict[str, Any]]) -> dict[str, Any]:
    """``scores.json`` from the raw and the clean aggregate-metrics documents (each entry's
    ``agent_ref``, server, ``key_metrics`` and ``agent_metrics`` are all it reads: the
    ``headlines`` of ``AggregateMetricsFold.write`` will do).

    Example::

        scores = build_scores(raw.document, clean.document)
        scores["groups"]["math_with_judge"]["metrics"]["mean/reward"]["difference"]
    """
    raw_by, clean_by = _by_server(raw), _by_server(clean)
    values = {_text(entry["_ng_environment_server"]): entry["_ng_environment_server"] for entry in [*clean, *raw]}
    servers = sorted(values, key=lambda text: server_order(values[text]))
    return {"groups": {server: _group(raw_by.get(server), clean_by.get(server)) for server in servers}}


def key_metrics(scores: Mapping[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """Each group's key metrics raw and clean, as the CLI summary and the flow's result show them.

    Example::

        key_metrics(build_scores(raw.document, clean.document))
        # {"math_with_judge": {"mean/reward": {"raw": 0.5, "clean": 0.5}, ...}, ...}
    """
    return {
        server: {name: {"raw": metric["raw"], "clean": metric["clean"]} for name, metric in group["metrics"].items()}
        for server, group in scores.get("groups", {}).items()
    }


def reward_values(digests: Iterable[ScoreDigest]) -> list[float]:
    """Each scored row's ``reward`` as the aggregate means count it (bools as 0/1), for the report's histogram.

    A row without a numeric reward, or with one no float holds (an integer past 1e308), is left out.
    """
    rewards = (finite_float(dict(digest.measures).get("reward")) for digest in digests)
    return [reward for reward in rewards if reward is not None]


def _by_server(document: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {_text(entry["_ng_environment_server"]): entry for entry in document}


def _group(raw: dict[str, Any] | None, clean: dict[str, Any] | None) -> dict[str, Any]:
    names = [*_headline(raw), *(name for name in _headline(clean) if name not in _headline(raw))]
    agent = (raw or clean or {}).get("agent_ref", {}).get("name")
    return {
        "agent": agent,
        "masked_rollouts": {"raw": _masked(raw), "clean": _masked(clean)},
        "metrics": {name: _metric(name, raw, clean) for name in names},
    }


def _metric(name: str, raw: dict[str, Any] | None, clean: dict[str, Any] | None) -> dict[str, Any]:
    before, after = _value(raw, name), _value(clean, name)
    return {
        "raw": before,
        "clean": after,
        "difference": after - before if _number(before) and _number(after) else None,
        "raw_ci95": _interval(raw, name),
        "clean_ci95": _interval(clean, name),
    }


def _headline(entry: dict[str, Any] | None) -> list[str]:
    return [name for name in (entry or {}).get("key_metrics", {}) if name.startswith("mean/")]


def _value(entry: dict[str, Any] | None, name: str) -> Any:
    return None if entry is None else entry["key_metrics"].get(name)


def _interval(entry: dict[str, Any] | None, name: str) -> list[Any] | None:
    metrics = {} if entry is None else entry["agent_metrics"]
    if CI_LOW + name not in metrics or CI_HIGH + name not in metrics:
        return None
    return [metrics[CI_LOW + name], metrics[CI_HIGH + name]]


def _masked(entry: dict[str, Any] | None) -> int | None:
    return None if entry is None else entry["key_metrics"].get("coverage/masked_rollouts", 0)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _text(server: Any) -> str:
    return server if isinstance(server, str) else str(server)
