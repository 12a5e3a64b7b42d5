"""``report.html``: one self-contained static page (inline CSS and SVG, no script, no asset).

Every value that reaches the page goes through :func:`html.escape`, links included: rows and
parameters are untrusted text. Machine-readable ``data-*`` attributes on the matrix cells and
verdict counts let tests (and scrapers) read the page without parsing prose.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from html import escape
from typing import Any

from evidence.capabilities import DIMENSION_LABELS
from evidence.report.accounting import accounting_table, expected_unknown_note, gate_table, lost_keys_table
from evidence.report.context import ReportContext
from evidence.report.page import definition_list, html_page, table_html
from evidence.report.scores import scores_html
from evidence.report.svg import histogram_svg
from evidence.report.tables import (
    capability_gaps_table,
    capability_parts,
    capability_words,
    findings_table,
    format_value,
    perf_table,
    verdict_counts,
)

__all__ = ["render_report"]


def render_report(context: ReportContext) -> str:
    """Render the run report as one HTML document (UTF-8 text, ends with a newline)."""
    sections = [
        _identity(context),
        *([_live(context.live)] if context.live is not None else []),
        *([_viewer(context.viewer)] if context.viewer else []),
        _scores(context),
        *([_gate(context.gate)] if context.gate is not None else []),
        _inputs(context),
        _accounting(context.accounting),
        _health(context.quality_summary),
        _matrix(context.capabilities),
        _performance(context),
        _files(context.links),
    ]
    return html_page(f"evidence-stage run {context.job_id} / {context.run_id}", sections)


def _identity(context: ReportContext) -> str:
    facts = {"Job": context.job_id, "Run": context.run_id, "Scope": context.scope}
    listed = definition_list(facts, "identity").removesuffix("</dl>")
    times = "".join(
        f'<dt>{label}</dt><dd><time datetime="{escape(value)}">{escape(readable_time(value))}</time></dd>'
        for label, value in (("Started", context.started_at), ("Finished", context.finished_at))
    )
    took = duration_text(context.started_at, context.finished_at)
    return "<h1>evidence-stage run report</h1>\n" + listed + times + (f"<dt>Took</dt><dd>{escape(took)}</dd>" if took else "") + "</dl>"


def _live(live: Mapping[str, Any]) -> str:
    """A followed job's snapshot: said plainly to be live and provisional, with its stalled and in-flight rollouts."""
    expected = "unknown" if live["expected"] is None else str(live["expected"])
    breach = " The quality gate is breached on what has landed so far." if live.get("gate_breached") else ""
    text = (
        f'<h2 id="live" data-done="false">Live: provisional</h2>\n<p class="warning">This is a snapshot of a running job taken at '
        f"{escape(readable_time(live['snapshot_at']))}: {live['rows']} rows and {live['failures']} failed attempts of {escape(expected)} "
        f"expected; {live['in_flight']} in flight, {live['stalled']} stalled, {live['waiting']} not started. Every figure below is "
        "provisional: the task-level health checks wait for every repeat of a task, and the run is final only with _SUCCESS."
        f"{escape(breach)}</p>"
    )
    for name, title in (("stalled_rollouts", "Stalled rollouts"), ("in_flight_rollouts", "In-flight rollouts")):
        if live[name]:
            rows = "".join(
                f'<tr><td>{escape(item["rollout"])}</td><td class="num">{escape(format_value(item["idle_s"]))}</td></tr>'
                for item in live[name]
            )
            text += (
                f'\n<h3>{title}</h3>\n<table id="{name.replace("_", "-")}"><thead><tr><th>Rollout</th>'
                f"<th>Seconds since its capture changed</th></tr></thead><tbody>{rows}</tbody></table>"
            )
    return text


def _viewer(href: str) -> str:
    """The link to the rollout viewer, near the top: from every count below to the rollouts behind it."""
    return (
        f'<p id="viewer-link" class="warning"><a href="{escape(href)}"><strong>Rollouts</strong></a>: every main attempt, '
        "filterable by verdict, agent, check, gap, status and ATIF outcome, each with its findings, turns, calls and gaps.</p>"
    )


def readable_time(iso: str) -> str:
    """An ISO 8601 time as people read it, in UTC to the second (``2026-01-01 00:02:00 UTC``); unparsable text as is."""
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return f"{moment:%Y-%m-%d %H:%M:%S}" + (" UTC" if moment.tzinfo is not None else "")


def duration_text(started: str, finished: str) -> str:
    """How long the run took (``2 min 0 s``, ``11.4 s``); empty when the times cannot be read."""
    try:
        seconds = (datetime.fromisoformat(finished) - datetime.fromisoformat(started)).total_seconds()
    except (TypeError, ValueError):
        return ""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def _scores(context: ReportContext) -> str:
    return scores_html(
        context.scores, context.masked_rollouts, context.masked_verdicts, context.quality_summary, context.rewards, context.viewer
    )


def _inputs(context: ReportContext) -> str:
    parameters = {name: format_value(value) for name, value in context.parameters.items()}
    return (
        "<h2>Inputs</h2>\n"
        + definition_list(context.inputs, "inputs")
        + "<h2>Parameters</h2>\n"
        + definition_list(parameters, "parameters")
    )


def _accounting(accounting: Mapping[str, Any] | None) -> str:
    if accounting is None:
        return '<h2>Run accounting</h2>\n<p class="muted">No accounting in this run.</p>'
    text = "<h2>Run accounting</h2>\n" + table_html(accounting_table(accounting), "accounting")
    if accounting.get("expected_unknown"):
        text += f'\n<p class="muted">{escape(expected_unknown_note(accounting))}</p>'
    lost = lost_keys_table(accounting)
    if lost.rows:
        more = f'<p class="muted">\u2026 and {accounting["lost_keys_omitted"]} more.</p>' if accounting.get("lost_keys_omitted") else ""
        text += "\n<h3>Lost rollouts</h3>\n" + table_html(lost, "lost-rollouts") + more
    return text


def _gate(gate: Mapping[str, Any]) -> str:
    verdict = "passed" if gate["passed"] else "failed"
    return f'<h2 id="gate" data-passed="{str(gate["passed"]).lower()}">Quality gate: {verdict}</h2>\n' + table_html(
        gate_table(gate), "gate-limits"
    )


def _health(summary: Mapping[str, Any] | None) -> str:
    if summary is None:
        return '<h2>Health</h2>\n<p class="muted">No health report in this run.</p>'
    cards = "".join(
        f'<div class="verdict"><span class="count" data-verdict="{escape(name)}">{escape(format_value(count))}</span>{escape(name)}</div>'
        for name, count in verdict_counts(summary).items()
    )
    findings = findings_table(summary)
    top = table_html(findings, "findings") if findings.rows else '<p class="muted">No findings.</p>'
    return f'<h2>Health</h2>\n<div class="verdicts">{cards}</div>\n<h3>Top findings</h3>\n{top}'


def _matrix(capabilities: Mapping[str, Any] | None) -> str:
    dimensions, agents = capability_parts(capabilities)
    if not agents:
        return '<h2>Trajectory capability matrix</h2>\n<p class="muted">No capability matrix in this run.</p>'
    head = "".join(f"<th>{escape(DIMENSION_LABELS[name])}</th>" for name in dimensions)
    rows = []
    for agent, entry in agents.items():
        cells = "".join(_matrix_cell(agent, name, entry["dimensions"][name]) for name in dimensions)
        rows.append(
            f'<tr data-agent="{escape(agent)}"><th scope="row">{escape(agent)}</th>'
            f'<td class="num">{escape(format_value(entry["rollouts"]))}</td>{cells}</tr>'
        )
    gaps = capability_gaps_table(capabilities)
    return (
        "<h2>Trajectory capability matrix</h2>\n"
        '<p class="muted">Measured from this run\'s evidence: <span class="cap" data-status="full">yes</span>: complete in every '
        'rollout; <span class="cap" data-status="partial">n%</span>: complete in some (the share of rollouts); '
        '<span class="cap" data-status="unavailable">no</span>: complete in none.</p>\n'
        f'<table id="capabilities"><thead><tr><th>Agent</th><th>Rollouts</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>\n"
        "<h3>Shortfalls</h3>\n" + (table_html(gaps, "capability-gaps") if gaps.rows else '<p class="muted">None.</p>')
    )


def _matrix_cell(agent: str, dimension: str, entry: Mapping[str, Any]) -> str:
    tip = f"complete in {entry['complete']:.0%}, present in {entry['present']:.0%} of rollouts"
    return (
        f'<td class="cap" data-agent="{escape(agent)}" data-dimension="{escape(dimension)}" '
        f'data-status="{escape(entry["status"])}" data-complete="{escape(repr(entry["complete"]))}" '
        f'title="{escape(tip)}">{escape(capability_words(entry))}</td>'
    )


def _performance(context: ReportContext) -> str:
    perf = perf_table(context.perf_summary)
    table = table_html(perf, "perf-summary") if perf.rows else '<p class="muted">No perf_summary in this run.</p>'
    return (
        '<h2>Performance</h2>\n<div class="histograms">'
        + histogram_svg(context.latency_ms, title="Total latency per rollout", unit="ms")
        + histogram_svg(context.tokens_per_turn, title="Completion tokens per turn", unit="tokens")
        + f"</div>\n{table}"
    )


def _files(links: Iterable[tuple[str, str]]) -> str:
    items = "".join(f'<li><a href="{escape(href)}">{escape(label)}</a></li>' for label, href in links)
    return f'<h2>Files</h2>\n<ul id="files">{items}</ul>'
