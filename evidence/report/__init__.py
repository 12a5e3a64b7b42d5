"""The run report: ``report.html`` plus markdown/table renderings for Prefect artifacts.

Pure rendering: the caller gathers a :class:`ReportContext` (run identity, health summary,
capabilities, perf_summary, histogram values, links) and writes the returned text.
"""

from evidence.report.accounting import accounting_markdown, gate_markdown
from evidence.report.context import ReportContext
from evidence.report.html import render_report
from evidence.report.markdown import (
    capabilities_markdown,
    capability_table_rows,
    health_markdown,
    perf_markdown,
    report_markdown,
    table_markdown,
    table_rows,
)
from evidence.report.scores import MASKED_LISTED, MaskedRollout, masked_rollout, scores_markdown
from evidence.report.svg import histogram_svg

__all__ = [
    "MASKED_LISTED",
    "MaskedRollout",
    "ReportContext",
    "accounting_markdown",
    "capabilities_markdown",
    "capability_table_rows",
    "gate_markdown",
    "health_markdown",
    "histogram_svg",
    "masked_rollout",
    "perf_markdown",
    "render_report",
    "report_markdown",
    "scores_markdown",
    "table_markdown",
    "table_rows",
]
