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

__all__ = ["EXCERPT_CHARS", "SHORT_CHARS", "Excerpts", "clean", "excerpt", "script_json", "short"]

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


class Excerpts:
    """``excerpt`` of a run of values whose texts mostly extend the one before (a rollout's turn
    questions: each is the conversation so far), each value's text decoded only where it is new.

    The excerpt needs the whole text's length in characters, which only decoding it gives. When
    a text starts with the previous one less its closing character, that part's count is known:
    the text ends in an ASCII byte, so the part ends on a character boundary, and the bytes the
    JSON writer makes are valid UTF-8 (decoding them replaces nothing), so the counts add up.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._known = b""  # the previous text less its last character
        self._known_chars = 0

    def __call__(self, value: Any) -> str | list[Any] | None:
        if value is None or isinstance(value, str):
            return excerpt(value, self._limit)
        data = dumps(value)
        if self._known and data.startswith(self._known):
            chars = self._known_chars + len(data[len(self._known) :].decode("utf-8", "replace"))
        else:
            chars = len(data.decode("utf-8", "replace"))
        self._known, self._known_chars = data[:-1], chars - 1
        if chars <= self._limit:
            return data.decode("utf-8", "replace")
        # the first ``limit`` characters lie within 4 bytes each of the start
        return [data[: 4 * self._limit].decode("utf-8", "replace")[: self._limit], chars]


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
