"""Markdown and table-row renderings of the report's tables, for Prefect flow-run artifacts.

The lead's publish task passes these to ``create_markdown_artifact`` /
``create_table_artifact``; they show the same tables as ``report.html``.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from evidence.report.context import ReportContext
from evidence.report.tables import (
    Table,
    capability_gaps_table,
    capability_table,
    findings_table,
    perf_table,
    verdict_table,
)

__all__ = [
    "capabilities_markdown",
    "capability_table_rows",
    "health_markdown",
    "markdown_text",
    "perf_markdown",
    "report_markdown",
    "table_markdown",
    "table_rows",
]


def table_markdown(table: Table) -> str:
    """A GitHub-flavoured markdown table; cells are escaped so no value can break the layout."""
    lines = [_row(table.headers), "|" + "---|" * len(table.headers)]
    lines.extend(_row(row) for row in table.rows)
    return "\n".join(lines) + "\n"


def table_rows(table: Table) -> list[dict[str, str]]:
    """The table as ``create_table_artifact`` rows: one dict per row, keyed by header."""
    return [dict(zip(table.headers, row, strict=True)) for row in table.rows]


def capability_table_rows(capabilities: Mapping[str, Any] | None) -> list[dict[str, str]]:
    """The capability matrix as table-artifact rows (agent, rollouts, one key per dimension)."""
    return table_rows(capability_table(capabilities))


def capabilities_markdown(capabilities: Mapping[str, Any] | None) -> str:
    """The capability matrix in Gym's ✅/🟡/❌ form, then the codes behind each shortfall."""
    matrix = capability_table(capabilities)
    if not matrix.rows:
        return "## Trajectory capability matrix\n\nNo capability matrix in this run.\n"
    text = "## Trajectory capability matrix\n\n" + table_markdown(matrix)
    gaps = capability_gaps_table(capabilities)
    if gaps.rows:
        text += "\n### Shortfalls\n\n" + table_markdown(gaps)
    return text


def health_markdown(summary: Mapping[str, Any] | None) -> str:
    """Verdict counts and the top findings of ``health/quality_summary.json``."""
    if summary is None:
        return "## Health\n\nNo health report in this run.\n"
    text = "## Health\n\n" + table_markdown(verdict_table(summary))
    findings = findings_table(summary)
    return text + "\n### Top findings\n\n" + (table_markdown(findings) if findings.rows else "No findings.\n")


def perf_markdown(perf_summary: Mapping[str, Any] | None) -> str:
    """The ``perf_summary.json`` statistics, run and groups side by side."""
    table = perf_table(perf_summary)
    return "## Performance\n\n" + (table_markdown(table) if table.rows else "No perf_summary in this run.\n")


def report_markdown(context: ReportContext) -> str:
    """The whole report as one markdown document (identity, health, matrix, performance)."""
    identity = Table(
        ("Job", "Run", "Started", "Finished"),
        ((context.job_id, context.run_id, context.started_at, context.finished_at),),
    )
    return "\n".join(
        [
            "# evidence-stage run report\n\n" + table_markdown(identity),
            health_markdown(context.quality_summary),
            capabilities_markdown(context.capabilities),
            perf_markdown(context.perf_summary),
        ]
    )


def _row(cells: tuple[str, ...]) -> str:
    return "| " + " | ".join(markdown_text(cell) for cell in cells) + " |"


def markdown_text(text: str) -> str:
    """Untrusted text made inert in markdown: HTML escaped, no pipe or line break can break a table."""
    return escape(text, quote=False).replace("|", "\\|").replace("\r", " ").replace("\n", " ")
