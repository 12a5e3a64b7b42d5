"""``viewer/index.html``: the page shell around the index and the script, with a Content-Security-Policy that allows only them.

The policy is today's report's (no request of any kind, no form, no base) plus one script: the
page's own, allowed by its SHA-256 (computed here, from the very text the page holds), and what
that script inserts (``'strict-dynamic'``): the detail files beside the page. No other script
can run, inline or loaded, so a row's markup that reached the page as markup could still do
nothing. The index travels as a JSON data block (``type="application/json"``), which browsers
never execute. The page holds no run id, no time and no input URL (only ``params.json`` records
those), so a rerun writes the same bytes, wherever its inputs were read from.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from evidence.viewer.script import SCRIPT
from evidence.viewer.text import script_json

__all__ = ["render_viewer", "viewer_csp", "viewer_page"]

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5rem 2rem;color:#1b1f24;max-width:90rem}
h1{font-size:1.5rem;margin-bottom:.25rem}h2{font-size:1.15rem;margin-top:1.75rem;border-bottom:1px solid #d0d7de}
h3{font-size:1.05rem;margin:.2rem 0}h4,h5{margin:.6rem 0 .2rem;font-size:.95rem}
table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;white-space:nowrap}
#rollouts tbody tr{cursor:pointer}#rollouts tbody tr:hover{background:#f6f8fa}
th.sortable a{color:inherit}dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem}dt{font-weight:600}dd{margin:0}
.muted{color:#57606a}.warning{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:.5rem 1rem}
.verdicts,.filters{display:flex;flex-wrap:wrap;gap:.75rem;margin:.75rem 0}
.verdict{border:1px solid #d0d7de;border-radius:6px;padding:.4rem .9rem;color:inherit;text-decoration:none}
.verdict .count{font-size:1.3rem;font-weight:600;display:block}
.badge{border-radius:1em;padding:0 .6em;border:1px solid #d0d7de;font-size:.85em;white-space:nowrap}
.badge[data-verdict=healthy]{background:#dafbe1}.badge[data-verdict=unhealthy]{background:#ffebe9}
.badge[data-verdict=unobserved]{background:#fff8c5}
.turn{border:1px solid #d0d7de;border-radius:6px;padding:.5rem 1rem;margin:.75rem 0}
.tool{border-left:3px solid #d0d7de;padding:.1rem .75rem;margin:.5rem 0}.tool.failed,tr.call.failed td{background:#fff5f5}
.io{display:grid;grid-template-columns:1fr 1fr;gap:1rem}
.flag{background:#ffebe9;border:1px solid #ff8182;border-radius:6px;padding:.2rem .6rem;margin:.3rem 0}
.focus{outline:3px solid #0969da;outline-offset:2px}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f8fa;padding:.4rem .6rem;margin:.2rem 0;max-height:24rem;overflow:auto}
pre{font-size:.85rem}
#app,.v{overflow-wrap:anywhere}th{overflow-wrap:normal}.v{unicode-bidi:isolate}pre.v{unicode-bidi:plaintext}
#rollouts td,#rollouts td .v{overflow-wrap:break-word}#rollouts{font-size:.9rem}.wide{overflow-x:auto}
"""

_INDEX_ID = "viewer-index"


def viewer_csp(script: str = SCRIPT) -> str:
    """The page's Content-Security-Policy: nothing but its inline style, ``script`` (by its hash) and the scripts it inserts."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; script-src 'sha256-{digest}' 'strict-dynamic'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
    )


def render_viewer(index: Mapping[str, Any], chunk_files: Sequence[str], links: Mapping[str, str]) -> str:
    """``viewer/index.html`` (UTF-8 text, ends with a newline): ``viewer_page``'s pieces joined."""
    return b"".join(viewer_page(index, chunk_files, links)).decode("utf-8")


_ROWS = b'"rows":[]'
"""The index's ``rows`` member with no row, as the compact JSON of the index writes it. A JSON
string writes every ``"`` inside it as ``\\"``, so these bytes can only be the member itself."""


def viewer_page(index: Mapping[str, Any], chunk_files: Sequence[str], links: Mapping[str, str]) -> Iterator[bytes]:
    """``viewer/index.html``'s bytes in pieces, the index's rows written one by one as ``index["rows"]`` gives them.

    The rows of a large run are read from the reduce's spill as the page is written, never held
    at once; each row's JSON is what it is inside the whole index's (compact JSON depends on no
    context, and every escape is of one character), so the bytes are the same.

    Args:
        index: ``ViewerIndex.document()``.
        chunk_files: the detail files' names, in order (``index["chunks"]`` gives each one's first rollout).
        links: hrefs relative to the page: ``report`` (report.html), ``rollouts`` (rollouts.jsonl)
            and ``atif`` (the ATIF folder, ending in ``/``).
    """
    rows: Iterable[Any] = index["rows"]
    head, tail = script_json({**index, "rows": [], "chunk_files": list(chunk_files), "links": dict(links)}).split(_ROWS, 1)
    yield (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="{viewer_csp()}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Rollouts - evidence-stage run viewer</title><style>{_CSS}</style></head><body>\n"
        '<main id="app"><h1>Rollouts</h1><p class="muted">Loading the rollouts\u2026</p>'
        "<noscript><p>The rollout viewer needs JavaScript; report.html and the run's files need none.</p></noscript></main>\n"
        f'<script type="application/json" id="{_INDEX_ID}">'
    ).encode()
    yield head + _ROWS[:-1]
    separator = b""
    for row in rows:
        yield separator + script_json(row)
        separator = b","
    yield b"]" + tail
    yield f"</script>\n<script>{SCRIPT}</script>\n</body></html>\n".encode()
