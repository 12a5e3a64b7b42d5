"""A run's figures as flat, named metrics (the names are documented in OPERATIONS.md, "Exporting a run").

| name | value |
|---|---|
| ``verdicts/<verdict>`` | main rollouts with that health verdict |
| ``verdict_shares/<verdict>`` | the same over all verdicts (0..1) |
| ``findings/<check>`` | rollouts (or tasks) the check flagged (``quality_summary`` issues) |
| ``atif/files``, ``atif/rejections`` | ATIF files written, main rows refused |
| ``perf/<field>`` | ``perf_summary.json`` run-level numbers |
| ``perf_groups/<group>/<field>`` | the same per group |
| ``accounting/<path>``, ``gate/<path>`` | every number in ``accounting.json`` / ``gate.json`` |
| ``scores/<group>/<key metric>/raw``, ``.../clean`` | ``scores.json``: a group's key metric (``mean/reward``) raw and clean |
| ``scores/<group>/masked_rollouts/raw``, ``.../clean`` | the rollouts each side masks in the group |

Only numbers a file holds become metrics: a null, a string or a missing file gives none. In
``accounting/`` and ``gate/`` objects are flattened with ``/``, booleans count 1 or 0, and lists
are left out.
Name parts are reduced to the characters every MLflow store accepts (others become ``_``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from evidence.models.run import RunCounts

__all__ = ["RunDocuments", "metric_part", "run_metrics"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\- ]")
_MAX_KEY = 250


def metric_part(name: str) -> str:
    """One path component of a metric name: safe characters, never empty, ``.`` or ``..``."""
    safe = _UNSAFE.sub("_", name)
    return "_" if safe in ("", ".", "..") else safe


@dataclass(frozen=True, slots=True)
class RunDocuments:
    """The small run outputs the metrics come from (None: the file is absent)."""

    counts: RunCounts  # the manifest's
    quality_summary: Mapping[str, Any] | None = None
    perf_summary: Mapping[str, Any] | None = None
    accounting: Mapping[str, Any] | None = None
    gate: Mapping[str, Any] | None = None
    scores: Mapping[str, Any] | None = None


def run_metrics(documents: RunDocuments) -> dict[str, float]:
    """Metric name -> value for one run, in a stable order."""
    counts = documents.counts
    metrics: dict[str, float] = {}
    verdicts = counts.verdicts
    total = sum(verdicts.values())
    for verdict, count in sorted(verdicts.items()):
        metrics[f"verdicts/{metric_part(verdict)}"] = count
        if total:
            metrics[f"verdict_shares/{metric_part(verdict)}"] = count / total
    issues = (documents.quality_summary or {}).get("run", {}).get("issues", {})
    metrics.update(_numbers(("findings",), issues))
    metrics["atif/files"] = counts.atif_files
    metrics["atif/rejections"] = counts.atif_rejections
    perf = documents.perf_summary or {}
    metrics.update(_numbers(("perf",), perf.get("run") or {}))
    for group, summary in sorted((perf.get("groups") or {}).items()):
        metrics.update(_numbers(("perf_groups", group), summary))
    metrics.update(_numbers(("accounting",), documents.accounting or {}))
    metrics.update(_numbers(("gate",), documents.gate or {}))
    metrics.update(_scores(documents.scores or {}))
    return metrics


def _scores(scores: Mapping[str, Any]) -> Iterator[tuple[str, float]]:
    """Each group's key metrics raw and clean, and its masked rollouts; a key metric's ``/`` nests its name."""
    for group, entry in (scores.get("groups") or {}).items():
        for metric, figures in (entry.get("metrics") or {}).items():
            values = {side: figures.get(side) for side in ("raw", "clean")}
            yield from _numbers(("scores", group, *metric.split("/")), values)
        yield from _numbers(("scores", group, "masked_rollouts"), entry.get("masked_rollouts") or {})


def _numbers(prefix: tuple[str, ...], document: Mapping[str, Any]) -> Iterator[tuple[str, float]]:
    """Every finite number (booleans as 1/0) below ``document``, named by its path."""
    for key, value in document.items():
        path = (*prefix, key)
        if isinstance(value, Mapping):
            yield from _numbers(path, value)
        elif isinstance(value, bool):
            yield _name(path), int(value)
        elif isinstance(value, (int, float)) and math.isfinite(value):
            yield _name(path), value


def _name(path: tuple[str, ...]) -> str:
    return "/".join(metric_part(str(part)) for part in path)[:_MAX_KEY]
