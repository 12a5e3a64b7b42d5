"""Bytes of an exported trajectory file and of its manifest line.

0.7.0 writes ``model_dump_json(indent=2, exclude_none=True)``; serialising our ordered dicts
with the same pydantic-core encoder gives the same bytes (float spelling such as ``1e+16`` and
``0.00001``, raw UTF-8, exact big integers) without re-validating a model per rollout. The
steps are written by orjson, whose indented text is those bytes at half the cost (see
:func:`_pretty`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any, Protocol

import orjson
import pydantic_core

__all__ = ["FINAL_NEWLINE", "encode_file", "encode_trajectory", "manifest_bytes", "text_pieces"]

FINAL_NEWLINE = b"\n"
"""Every file ends with it, written after the text's pieces (appending it would copy the text)."""
_STEPS = "steps"


def encode_trajectory(document: dict[str, Any]) -> bytes:
    """The exact file bytes: 2-space indented JSON plus a final newline."""
    return pydantic_core.to_json(document, indent=2) + FINAL_NEWLINE


def text_pieces(document: dict[str, Any]) -> tuple[bytes, ...]:
    """``to_json(document, indent=2)`` in pieces, one per step; empties ``document["steps"]``.

    The pretty printer indents by depth alone, and JSON text holds no raw newline (strings
    escape theirs), so a value's own pretty text with the parent's indent added after each
    newline is exactly its text inside the document. Each step is dropped once encoded, so a
    long document and its whole text never coexist (together they were a long attempt's peak).
    """
    pieces = [b"{\n"]
    for position, (key, value) in enumerate(document.items()):
        pieces.append(b"%s  %s: " % (b",\n" if position else b"", pydantic_core.to_json(key)))
        if key == _STEPS and isinstance(value, list) and value:
            pieces.extend(_list_pieces(value))
        else:
            pieces.append(_nested(value, b"\n  "))
    pieces.append(b"\n}")
    return tuple(pieces)


def _list_pieces(items: list[Any]) -> list[bytes]:
    """A non-empty list at depth 1, item by item, emptying ``items`` as it goes."""
    items.reverse()
    pieces = [b"[\n"]
    while items:
        pieces.append(b"    " + _nested(items.pop(), b"\n    ") + (b",\n" if items else b"\n  ]"))
    return pieces


def _nested(value: Any, indent: bytes) -> bytes:
    return _pretty(value).replace(b"\n", indent)


def _pretty(value: Any) -> bytes:
    """``pydantic_core.to_json(value, indent=2)``, written by orjson where it can write the value.

    The two write the same bytes for every JSON value orjson takes: the same shortest round-trip
    float digits and exponent rule, the same string escapes, the same indentation (the tests
    hold them to it). What orjson refuses goes to pydantic-core: it writes an integer beyond
    64 bits, and raises its own error for a lone surrogate, as it always did. A non-finite
    float is no JSON value (pydantic-core writes ``Infinity``, orjson ``null``): a document
    holds none, being made of a row as a JSON text reads and finite conversions of its numbers.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except orjson.JSONEncodeError:
        return pydantic_core.to_json(value, indent=2)


def encode_file(document: dict[str, Any], task_index: int, rollout_index: int) -> tuple[str, tuple[bytes, ...], bytes]:
    """Name the file ``<task>-<rollout>.json``; its text in pieces (:func:`text_pieces`, without
    ``FINAL_NEWLINE``); the manifest line pinning its sha256."""
    file_name = f"{task_index}-{rollout_index}.json"
    text = text_pieces(document)
    digest = hashlib.sha256()
    for piece in (*text, FINAL_NEWLINE):
        digest.update(piece)
    entry = {
        "_ng_rollout_index": rollout_index,
        "_ng_task_index": task_index,
        "expected_sha256": digest.hexdigest(),
        "trajectory_path": file_name,
    }
    return file_name, text, json.dumps(entry, sort_keys=True, separators=(",", ":")).encode()


class HasManifestLine(Protocol):
    """An exported file as the manifest sees it (``evidence.atif.digest.AtifFile``)."""

    @property
    def manifest_line(self) -> bytes: ...


def manifest_bytes(files: Iterable[HasManifestLine]) -> bytes:
    """``manifest.jsonl``: one line per file in the given (input) order, newline-terminated."""
    return b"".join(file.manifest_line + b"\n" for file in files)
