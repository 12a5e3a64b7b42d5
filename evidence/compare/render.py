"""``compare.md`` and ``compare.html``: the same tables, as markdown and as one static page.

The page follows ``report.html``: inline CSS, no script, every value escaped. Each group's
heading carries ``data-group`` and the summary carries ``data-status``/``data-trusted`` so a
test (or a scraper) reads them without parsing prose.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from evidence.compare.model import Comparison
from evidence.compare.tables import (
    atif_table,
    capability_table,
    checks_table,
    coverage_table,
    group_table,
    pairing_table,
    reasons_table,
    scores_table,
    sides_table,
    transition_table,
    trust_table,
    verdict_table,
)
from evidence.report.markdown import markdown_text, table_markdown
from evidence.report.page import html_page, table_html
from evidence.report.tables import Table

__all__ = ["compare_markdown", "render_compare"]

RUN_GROUP = "(whole run)"
_NONE = "None."


def _sections(comparison: Comparison) -> list[tuple[str, list[tuple[str, Table]]]]:
    """(heading, [(element id, table)]) in page order; groups come after, one section each."""
    return [
        ("Runs", [("sides", sides_table(comparison))]),
        ("Trust", [("trust", trust_table(comparison))]),
        ("Pairing", [("pairing", pairing_table(comparison))]),
        ("Scores, raw and clean", [("scores", scores_table(comparison))]),
        (
            "Health",
            [
                ("verdicts", verdict_table(comparison)),
                ("transitions", transition_table(comparison)),
                ("checks", checks_table(comparison)),
                ("coverage", coverage_table(comparison)),
            ],
        ),
        ("Capability changes", [("capability-changes", capability_table(comparison))]),
        ("ATIF", [("atif", atif_table(comparison)), ("atif-reasons", reasons_table(comparison))]),
    ]


def _groups(comparison: Comparison) -> list[tuple[str, Table]]:
    return [(RUN_GROUP, group_table(comparison.run)), *((name, group_table(g)) for name, g in comparison.groups.items())]


def _headline(comparison: Comparison) -> str:
    changed = f": {', '.join(comparison.changed)}" if comparison.changed else ""
    trust = "trusted" if comparison.trust.trusted else f"not to be trusted as is ({len(comparison.trust.issues)} issues)"
    return f"B against A: {comparison.status}{changed}; {trust}."


def compare_markdown(comparison: Comparison) -> str:
    """The comparison as one markdown document (also the flow run's markdown artifact)."""
    parts = ["# evidence-stage comparison\n\n" + _headline(comparison) + "\n"]
    for heading, tables in _sections(comparison):
        parts.append(f"## {heading}\n\n" + "\n".join(_markdown_table(t) for _, t in tables))
    parts.append("## Reward and perf per group\n")
    parts += [f"### {markdown_text(name or '(empty group name)')}\n\n" + _markdown_table(t) for name, t in _groups(comparison)]
    parts.append(_bootstrap_note(comparison) + "\n")
    return "\n".join(parts)


def render_compare(comparison: Comparison) -> str:
    """The comparison as one self-contained HTML page (UTF-8 text, ends with a newline)."""
    trusted = comparison.trust.trusted
    style = "" if trusted else ' class="warning"'
    body = [
        "<h1>evidence-stage comparison</h1>",
        (
            f'<p id="summary" data-status="{escape(comparison.status)}" data-trusted="{str(trusted).lower()}"{style}>'
            f"{escape(_headline(comparison))}</p>"
        ),
    ]
    for heading, tables in _sections(comparison):
        body.append(f"<h2>{escape(heading)}</h2>\n" + "\n".join(_html_table(t, element_id) for element_id, t in tables))
    body.append("<h2>Reward and perf per group</h2>")
    for index, (name, table) in enumerate(_groups(comparison)):
        body.append(f'<h3 data-group="{escape(name)}">{escape(name or "(empty group name)")}</h3>\n' + _html_table(table, f"group-{index}"))
    body.append(f'<p class="muted">{escape(_bootstrap_note(comparison))}</p>')
    return html_page(f"evidence-stage comparison {comparison.a.run_id} / {comparison.b.run_id}", body)


def _bootstrap_note(comparison: Comparison) -> str:
    setup = comparison.bootstrap
    return (
        f"Intervals: paired bootstrap over tasks, {setup['resamples']} resamples, seed {setup['seed']}, "
        f"central {setup['confidence']:.0%} of the resampled mean differences (B \u2212 A)."
    )


def _empty_or(render: Callable[[Table], str], table: Table, empty: str) -> str:
    return render(table) if table.rows else empty


def _markdown_table(table: Table) -> str:
    return _empty_or(table_markdown, table, _NONE + "\n")


def _html_table(table: Table, element_id: str) -> str:
    return _empty_or(lambda t: table_html(t, element_id), table, f'<p class="muted">{_NONE}</p>')
