"""The static page shell shared by ``report.html`` and ``compare.html``.

One stylesheet and one way to write a table or a fact list, so both pages look alike and
escape alike: every value that reaches a page goes through :func:`html.escape`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from html import escape

from evidence.report.tables import Table

__all__ = ["CSP", "breakable", "definition_list", "html_page", "table_html"]

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem;color:#1b1f24;max-width:78rem}
h1{font-size:1.5rem;margin-bottom:.25rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #d0d7de}
table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left}
th{background:#f6f8fa}td.num{text-align:right}td.cap{text-align:center;white-space:nowrap}
dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem}dt{font-weight:600}dd{margin:0}
.verdicts{display:flex;gap:1rem}.verdict{border:1px solid #d0d7de;border-radius:6px;padding:.5rem 1rem}
.verdict .count{font-size:1.4rem;font-weight:600;display:block}
.histograms{display:flex;flex-wrap:wrap;gap:1.5rem}.histogram .bar{fill:#0969da}
.histogram .axis{stroke:#57606a}.histogram text{font-size:11px;fill:#57606a}.histogram .h-title{font-weight:600}
td.cap[data-status=full]{background:#dafbe1}td.cap[data-status=partial]{background:#fff8c5}
td.cap[data-status=unavailable]{background:#ffebe9}.muted{color:#57606a}
.cap::before{content:"";display:inline-block;width:.65em;height:.65em;margin-right:.3em;border-radius:50%;vertical-align:baseline}
.cap[data-status=full]::before{background:#1a7f37}.cap[data-status=unavailable]::before{background:#cf222e}
.cap[data-status=partial]::before{background:linear-gradient(90deg,#bf8700 50%,#fff 50%);border:1px solid #bf8700}
.warning{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:.5rem 1rem}
td,dd{overflow-wrap:anywhere}td.num,td.cap{overflow-wrap:normal}
.group-scores{display:flex;flex-wrap:wrap;gap:.5rem 2rem;align-items:flex-start}
table.scores caption{text-align:left;padding:.25rem 0}table.scores th,table.scores td{overflow-wrap:normal}
"""


CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
"""The pages' Content-Security-Policy: no script, no request of any kind; only the inline stylesheet."""


def html_page(title: str, sections: Iterable[str]) -> str:
    """One self-contained HTML document (inline CSS, no script), ending with a newline.

    Its Content-Security-Policy (:data:`CSP`) lets a browser load nothing: were a value ever to
    slip past escaping, it could neither run a script nor reach the network.
    """
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>{escape(title)}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{_CSS}</style></head><body>\n" + "\n".join(sections) + "\n</body></html>\n"
    )


def breakable(text: str) -> str:
    """``text`` escaped, with a line-break opportunity (``<wbr>``) after each ``_`` and ``/``.

    Ids and metric names (``claude_code_agent``, ``mean/input_tokens``) then wrap between their
    words in a narrow column, where ``overflow-wrap:anywhere`` broke them mid-word.
    """
    return escape(text).replace("_", "_<wbr>").replace("/", "/<wbr>")


def definition_list(facts: Mapping[str, str], element_id: str) -> str:
    """``<dl>`` of label -> value, both escaped."""
    items = "".join(f"<dt>{escape(name)}</dt><dd>{escape(str(value))}</dd>" for name, value in facts.items())
    return f'<dl id="{escape(element_id)}">{items}</dl>'


def table_html(table: Table, element_id: str, *, href: Callable[[str], str] | None = None) -> str:
    """``<table>`` with the table's headers and rows, every cell escaped; with ``href``, each row's
    first cell is a link to ``href(cell)`` (the masked rollouts' ids, into the rollout viewer)."""
    head = "".join(f"<th>{escape(header)}</th>" for header in table.headers)
    body = "".join("<tr>" + "".join(_cell(cell, href if n == 0 else None) for n, cell in enumerate(row)) + "</tr>" for row in table.rows)
    return f'<table id="{escape(element_id)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _cell(text: str, href: Callable[[str], str] | None) -> str:
    return f'<td><a href="{escape(href(text))}">{escape(text)}</a></td>' if href else f"<td>{escape(text)}</td>"
