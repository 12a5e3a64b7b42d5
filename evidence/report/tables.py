"""The report's tables as plain data, rendered alike as HTML, markdown and Prefect table rows.

Building each table once keeps the page and the flow-run artifacts saying the same thing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evidence.capabilities import DIMENSION_LABELS
from evidence.capabilities.values import as_dict

__all__ = [
    "Table",
    "capability_cell",
    "capability_gaps_table",
    "capability_parts",
    "capability_table",
    "capability_words",
    "findings_table",
    "format_value",
    "perf_table",
    "verdict_counts",
    "verdict_table",
]

VERDICTS = ("healthy", "unhealthy", "unobserved")
TOP_FINDINGS = 10


@dataclass(frozen=True, slots=True)
class Table:
    """A header row and body rows of display strings (not yet escaped for any format)."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def verdict_counts(summary: Mapping[str, Any] | None) -> dict[str, Any]:
    """Rollouts per health verdict (0.7.0's ``run.verdicts``), in verdict order."""
    verdicts = as_dict(as_dict(as_dict(summary).get("run")).get("verdicts"))
    return {name: verdicts.get(name, 0) for name in VERDICTS}


def verdict_table(summary: Mapping[str, Any] | None) -> Table:
    """Health verdict counts plus their total."""
    counts = verdict_counts(summary)
    rows = [(name, format_value(count)) for name, count in counts.items()]
    rows.append(("total", format_value(sum(v for v in counts.values() if isinstance(v, int)))))
    return Table(("Verdict", "Rollouts"), tuple(rows))


def findings_table(summary: Mapping[str, Any] | None) -> Table:
    """The checks with the most findings (0.7.0's ``run.issues``), most frequent first."""
    issues = as_dict(as_dict(as_dict(summary).get("run")).get("issues"))
    found = [(check, count) for check, count in issues.items() if isinstance(count, int) and count > 0]
    found.sort(key=lambda item: (-item[1], item[0]))
    return Table(("Check", "Findings"), tuple((check, format_value(n)) for check, n in found[:TOP_FINDINGS]))


CAPABILITY_WORDS = {"full": "yes", "unavailable": "no"}
"""What a ✅ or ❌ cell says in words: a page read without an emoji font showed empty boxes."""


def capability_words(entry: Mapping[str, Any]) -> str:
    """A matrix cell's meaning in words: yes, no, or (partial) the share of complete rollouts."""
    if entry["status"] == "partial":
        return f"{entry['complete']:.0%}"
    return CAPABILITY_WORDS.get(entry["status"], str(entry["status"]))


def capability_cell(entry: Mapping[str, Any]) -> str:
    """Gym's ✅, 🟡 or ❌ followed by the words (markdown and table artifacts)."""
    return f"{entry['symbol']} {capability_words(entry)}"


def capability_table(capabilities: Mapping[str, Any] | None) -> Table:
    """One row per agent, one ✅/🟡/❌ column per dimension."""
    dimensions, agents = capability_parts(capabilities)
    headers = ("Agent", "Rollouts", *(DIMENSION_LABELS[name] for name in dimensions))
    rows = tuple(
        (agent, format_value(entry["rollouts"]), *(capability_cell(entry["dimensions"][n]) for n in dimensions))
        for agent, entry in agents.items()
    )
    return Table(headers, rows)


def capability_gaps_table(capabilities: Mapping[str, Any] | None) -> Table:
    """Why each dimension fell short: agent, dimension, code, rollouts with that code."""
    dimensions, agents = capability_parts(capabilities)
    rows = tuple(
        (agent, DIMENSION_LABELS[name], code, format_value(count))
        for agent, entry in agents.items()
        for name in dimensions
        for code, count in entry["dimensions"][name]["gaps"].items()
    )
    return Table(("Agent", "Dimension", "Gap code", "Rollouts"), rows)


def capability_parts(capabilities: Mapping[str, Any] | None) -> tuple[list[str], Mapping[str, Any]]:
    """The dimension order and the per-agent entries; both empty when the run has no matrix."""
    document = as_dict(capabilities)
    return list(document.get("dimensions") or []), as_dict(document.get("agents"))


def perf_table(perf_summary: Mapping[str, Any] | None) -> Table:
    """perf_summary statistics: one row per statistic, columns ``run`` then each group."""
    columns = {"run": as_dict(as_dict(perf_summary).get("run"))}
    columns.update((name, as_dict(stats)) for name, stats in as_dict(as_dict(perf_summary).get("groups")).items())
    statistics = list(dict.fromkeys(key for stats in columns.values() for key in stats))
    rows = tuple((key, *(format_value(stats[key]) if key in stats else "" for stats in columns.values())) for key in statistics)
    return Table(("Statistic", *columns), rows)


def format_value(value: Any) -> str:
    """Readable text for a JSON value: floats to at most 3 decimals, null as an em dash."""
    if value is None:
        return "\u2014"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        text = f"{value:.3f}".rstrip("0").rstrip(".")
        return "0" if text == "-0" else text
    if isinstance(value, (int, str)):
        return str(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
