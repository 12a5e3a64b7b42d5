"""The report's scores section: ``scores.json`` raw against clean, and the rollouts the clean side masks.

The scores come first on the page and in the flow run's artifacts: a mean that moves once the
untrustworthy rollouts are left out is the first thing a reader needs to know. The masked
rollouts are listed from ``health/rollout_verdicts.jsonl`` (the first :data:`MASKED_LISTED` in
the file's order), each with the checks that fired on it most often.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any
from urllib.parse import urlencode

from evidence.capabilities.values import as_dict, dicts
from evidence.report.markdown import table_markdown
from evidence.report.page import breakable, table_html
from evidence.report.svg import histogram_svg
from evidence.report.tables import Table, format_value, verdict_counts

__all__ = [
    "MASKED_LISTED",
    "TOP_CHECKS",
    "MaskedRollout",
    "checks_text",
    "masked_rollout",
    "masked_table",
    "masked_total",
    "score_groups",
    "score_rows",
    "scores_html",
    "scores_markdown",
    "scores_table",
]

MASKED_LISTED = 20
"""At most this many masked rollouts are listed; the total comes from the verdict counts."""
TOP_CHECKS = 3
"""A masked rollout's checks listed, most findings first."""

SCORE_HEADERS = (
    "Group",
    "Agent",
    "Key metric",
    "Raw",
    "Clean",
    "Clean \u2212 raw",
    "Raw 95 % interval",
    "Clean 95 % interval",
    "Masked raw / clean",
)
_INTRO = (
    "Raw: 0.7.0's aggregate metrics (aggregate_metrics.json). Clean: the same with the masked rollouts below left out "
    "too (aggregate_metrics_clean.json). Intervals: 0.7.0's 95 % t interval across repeats (none with a single repeat)."
)


@dataclass(frozen=True, slots=True)
class MaskedRollout:
    """One rollout the clean scores leave out, as the report lists it.

    Attributes:
        rollout_id: the verdict line's ``rollout_id``.
        verdict: its health verdict.
        checks: (check id, findings of that check), at most :data:`TOP_CHECKS`, most findings
            first (ties in the order the checks first fired).
        findings: all its findings.
    """

    rollout_id: str
    verdict: str
    checks: tuple[tuple[str, int], ...]
    findings: int


def masked_rollout(line: Mapping[str, Any]) -> MaskedRollout:
    """A verdict line (``health/rollout_verdicts.jsonl``) as a listed masked rollout."""
    findings = dicts(line.get("findings"))
    counts = Counter(str(finding.get("check")) for finding in findings)
    verdict = line.get("verdict")
    return MaskedRollout(
        rollout_id=str(line.get("rollout_id")),
        verdict=verdict if isinstance(verdict, str) else format_value(verdict),
        checks=tuple(counts.most_common(TOP_CHECKS)),
        findings=len(findings),
    )


def score_groups(scores: Mapping[str, Any] | None) -> Iterator[tuple[str, Mapping[str, Any], dict[str, Mapping[str, Any]]]]:
    """(group, its entry, key metric -> the metric's entry) in ``scores.json`` order."""
    for server, group in as_dict(as_dict(scores).get("groups")).items():
        yield server, as_dict(group), {name: as_dict(metric) for name, metric in as_dict(as_dict(group).get("metrics")).items()}


def score_rows(scores: Mapping[str, Any] | None) -> Iterator[tuple[str, Mapping[str, Any], str, Mapping[str, Any]]]:
    """(group, its entry, key metric, the metric's entry) in ``scores.json`` order."""
    for server, group, metrics in score_groups(scores):
        for name, metric in metrics.items():
            yield server, group, name, metric


def scores_table(scores: Mapping[str, Any] | None) -> Table:
    """One row per group and key metric: raw, clean, their difference and 0.7.0's intervals."""
    rows = tuple(
        (
            server,
            format_value(group.get("agent")),
            name,
            format_value(metric.get("raw")),
            format_value(metric.get("clean")),
            format_value(metric.get("difference")),
            _interval(metric.get("raw_ci95")),
            _interval(metric.get("clean_ci95")),
            _masked(group.get("masked_rollouts")),
        )
        for server, group, name, metric in score_rows(scores)
    )
    return Table(SCORE_HEADERS, rows)


def masked_table(masked: Sequence[MaskedRollout]) -> Table:
    """The listed masked rollouts: id, verdict, their top checks."""
    rows = tuple((entry.rollout_id, entry.verdict, checks_text(entry)) for entry in masked)
    return Table(("Rollout", "Verdict", "Top findings"), rows)


def checks_text(entry: MaskedRollout) -> str:
    """``check (n), check (n)`` and how many findings are not shown."""
    text = ", ".join(f"{check} ({count})" for check, count in entry.checks) or "no findings"
    shown = sum(count for _, count in entry.checks)
    return text + (f", {entry.findings - shown} more" if entry.findings > shown else "")


def masked_note(masked_verdicts: Sequence[str], listed: int, total: int | None) -> str:
    """What the clean side leaves out, and how many of those rollouts are listed."""
    if not masked_verdicts:
        return "Clean scores mask no rollout by health (score mask: none)."
    text = f"Clean scores leave out the rollouts whose health verdict is {' or '.join(masked_verdicts)}"
    if total is None:
        return text + "."
    return text + f": {total} in this run" + (f", the first {listed} listed." if total > listed else ".")


def masked_total(summary: Mapping[str, Any] | None, masked_verdicts: Sequence[str]) -> int | None:
    """How many rollouts have a verdict the clean scores mask (``run.verdicts``); None without a health report."""
    if summary is None:
        return None
    counts = verdict_counts(summary)
    return sum(n for verdict in masked_verdicts if isinstance(n := counts.get(verdict), int))


def scores_markdown(
    scores: Mapping[str, Any] | None, masked: Sequence[MaskedRollout], masked_verdicts: Sequence[str], summary: Mapping[str, Any] | None
) -> str:
    """The scores section of the run's artifacts: raw against clean, then the masked rollouts.

    ``summary`` is the run's ``health/quality_summary.json`` (the number of masked rollouts).
    """
    if scores is None:
        return "## Scores: raw against clean\n\nNo scores.json in this run.\n"
    table = scores_table(scores)
    text = "## Scores: raw against clean\n\n" + (table_markdown(table) if table.rows else "No group was scored.\n")
    text += "\n### Masked rollouts\n\n" + masked_note(masked_verdicts, len(masked), masked_total(summary, masked_verdicts)) + "\n"
    return text + ("\n" + table_markdown(masked_table(masked)) if masked else "")


def scores_html(
    scores: Mapping[str, Any] | None,
    masked: Sequence[MaskedRollout],
    masked_verdicts: Sequence[str],
    summary: Mapping[str, Any] | None,
    rewards: Sequence[float],
    viewer: str | None = None,
) -> str:
    """The page's first section: raw against clean per group (one compact table each, its key
    metrics as columns), the masked rollouts (each a link into the rollout viewer at ``viewer``,
    when the run has one), the rewards.

    Each metric's column heading carries ``data-group``, ``data-metric``, ``data-raw`` and
    ``data-clean`` (the JSON numbers as written, ``null`` when absent) so a reader need not parse
    the cells.
    """
    heading = '<h2 id="scores">Scores: raw against clean</h2>\n'
    if scores is None:
        return heading + '<p class="muted">No scores.json in this run.</p>'
    tables = [_group_table(server, group, metrics) for server, group, metrics in score_groups(scores) if metrics]
    scored = f'<div class="group-scores">{"".join(tables)}</div>' if tables else '<p class="muted">No group was scored.</p>'
    note = escape(masked_note(masked_verdicts, len(masked), masked_total(summary, masked_verdicts)))
    link = (lambda rollout_id: f"{viewer}#{urlencode({'id': rollout_id})}") if viewer else None
    listed = table_html(masked_table(masked), "masked-rollouts", href=link) if masked else ""
    histogram = histogram_svg(rewards, title="Reward per rollout (raw)", unit="")
    return (
        heading
        + f'<p class="muted">{escape(_INTRO)}</p>\n'
        + scored
        + f'\n<h3>Masked rollouts</h3>\n<p class="muted" id="masked-note">{note}</p>{listed}\n'
        + f'<div class="histograms">{histogram}</div>'
    )


def _group_table(server: str, group: Mapping[str, Any], metrics: Mapping[str, Mapping[str, Any]]) -> str:
    """One group's scores: a row per figure, a column per key metric; names wrap at ``_`` and ``/`` only."""
    head = "".join(
        f'<th scope="col" data-group="{escape(server)}" data-metric="{escape(name)}" '
        f'data-raw="{escape(_json(metric.get("raw")))}" data-clean="{escape(_json(metric.get("clean")))}">{breakable(name)}</th>'
        for name, metric in metrics.items()
    )
    body = "".join(
        f'<tr><th scope="row">{escape(label)}</th>'
        + "".join(f'<td class="num">{escape(shown(metric.get(field)))}</td>' for metric in metrics.values())
        + "</tr>"
        for label, field, shown in _FIGURES
    )
    caption = (
        f"<strong>{breakable(server)}</strong> \u00b7 agent {breakable(format_value(group.get('agent')))}"
        f" \u00b7 masked rollouts raw / clean: {escape(_masked(group.get('masked_rollouts')))}"
    )
    return (
        f'<table class="scores" data-group="{escape(server)}"><caption>{caption}</caption>'
        f"<thead><tr><th>Key metric</th>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _json(value: Any) -> str:
    return json.dumps(value)


def _interval(value: Any) -> str:
    if isinstance(value, list) and len(value) == 2:
        return f"[{format_value(value[0])}, {format_value(value[1])}]"
    return format_value(value)


def _masked(value: Any) -> str:
    counts = as_dict(value)
    return f"{format_value(counts.get('raw'))} / {format_value(counts.get('clean'))}"


_FIGURES: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("Raw", "raw", format_value),
    ("Clean", "clean", format_value),
    ("Clean \u2212 raw", "difference", format_value),
    ("Raw 95 % interval", "raw_ci95", _interval),
    ("Clean 95 % interval", "clean_ci95", _interval),
)
"""A group table's rows: label, the metric entry's field, how it is shown."""
