"""Text from rows as the viewer shows it: cut to an excerpt, made safe to encode, written as script data.

Rows are untrusted: any string may hold markup, a script, a line of a megabyte, right-to-left
overrides or a lone surrogate (Python's ``json`` reads ``"\\ud800"``; no UTF-8 encoder writes
it). The page never parses data as HTML (it builds text nodes), so nothing here escapes for
HTML; what it does is keep the data files valid and small: a lone surrogate becomes U+FFFD, a
long text becomes its first characters and its length, and ``script_json`` writes JSON that
cannot close the ``<script>`` element it sits in.
"""

from __future__ import annotations

from typing import Any

from evidence.jsonl import dumps

__all__ = ["EXCERPT_CHARS", "SHORT_CHARS", "clean", "excerpt", "script_json", "short"]

EXCERPT_CHARS = 400
"""Characters of a tool's arguments or output, a turn's answer, an error body kept in the viewer; the row keeps all of it."""
SHORT_CHARS = 160
"""Characters of an identifier, a locator or a finding's detail: enough to read, bounded for a hostile row."""

# Inside a JSON string these bytes may stand as they are; in a page they could end the <script>
# element or open a comment, and U+2028/U+2029 end a line in old JavaScript parsers.
_SCRIPT_ESCAPES = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


def clean(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (a paired one becomes its character)."""
    # Most texts are ASCII ids and codes: ``isascii`` reads a flag CPython keeps on every str
    # (no scan), and ASCII holds no surrogate, so they skip the UTF-8 encoding that finds one.
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str | list[Any] | None:
    """A value as the viewer shows it: None stays None; a string, or any other value as compact
    JSON, is cleaned and kept whole up to ``limit`` characters, else ``[first limit characters,
    total characters]`` (the page says how much more the row holds)."""
    if value is None:
        return None
    # A UTF-8 decoding never yields a surrogate (it replaces an encoded one), so only a string
    # needs cleaning: another value's JSON, often kilobytes, is not encoded again to look for one.
    text = clean(value) if isinstance(value, str) else dumps(value).decode("utf-8", "replace")
    if len(text) <= limit:
        return text
    return [text[:limit], len(text)]


def short(value: Any) -> Any:
    """A string cleaned and cut to ``SHORT_CHARS`` (ids, names and codes are short; a hostile one
    is not), ending in an ellipsis when cut; any other value as it is."""
    if isinstance(value, str):
        text = value if value.isascii() else clean(value)  # most are ASCII ids: no call to clean
        return text if len(text) <= SHORT_CHARS else text[:SHORT_CHARS] + "\u2026"
    return value


def script_json(value: Any) -> bytes:
    """``value`` as JSON that is also a JavaScript expression and safe inside ``<script>``.

    ``<``, ``>``, ``&``, U+2028 and U+2029 can only occur inside JSON strings, where their
    ``\\uXXXX`` escapes mean the same; so ``</script>`` or ``<!--`` in a row can end nothing.
    """
    text = dumps(value)
    for raw, escaped in _SCRIPT_ESCAPES:
        text = text.replace(raw, escaped)
    return text
