"""``manifest.json`` read once, line by line: a few small top-level values, then the attempt entries one at a time.

A manifest holds one entry per attempt (and one per input file), so parsing it whole costs
memory in proportion to the job. The manifest is written with orjson's 2-space indentation
(``evidence.models.run.manifest_chunks``): no JSON string spans a line, so a line can be
tokenised on its own. The scanner tracks the nesting depth, captures the values of the
top-level keys it is asked for, and hands out the items of one top-level array as they end.
Any valid JSON is read correctly; only a manifest written on one line would be held whole.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from pydantic import ValidationError

from evidence import AttemptEntry, ManifestHead
from tasks.storage import Location

# a JSON string (escapes included), or a bracket or colon outside strings
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]:]')


class ManifestError(ValueError):
    """``manifest.json`` is not the document this stage writes."""


@dataclass
class _Capture:
    """The bytes of one value being read, from the line it started on."""

    depth: int  # the depth the value closes back to
    pieces: list[bytes] = field(default_factory=list)


def top_level(lines: Iterable[bytes], wanted: frozenset[str], streamed: str) -> Iterator[tuple[str, Any]]:
    """``(key, value)`` for each top-level key in ``wanted`` whose value is an object or array,
    then ``(streamed, item)`` for each item of the top-level array ``streamed``, in document order."""
    depth = 0
    last_string: bytes | None = None
    key: str | None = None
    streaming = False
    capture: _Capture | None = None
    for line in lines:
        start = 0 if capture is not None else None
        for match in _TOKEN.finditer(line):
            token = match.group()
            first = token[:1]
            if first == b'"':
                last_string = token
                continue
            if token == b":":
                if depth == 1 and last_string is not None:
                    key = orjson.loads(last_string)
                continue
            if first in (b"{", b"["):
                if capture is None and ((depth == 1 and key in wanted) or (streaming and depth == 2)):
                    capture, start = _Capture(depth), match.start()
                elif depth == 1 and key == streamed and token == b"[":
                    streaming = True
                depth += 1
                continue
            depth -= 1
            if capture is not None and depth == capture.depth:
                capture.pieces.append(line[start : match.end()])
                value = orjson.loads(b"\n".join(capture.pieces))
                capture = start = None
                yield (streamed if streaming else key or "", value)
            elif streaming and depth == 1:
                streaming = False
        if capture is not None:
            capture.pieces.append(line[start:] if start is not None else line)


@dataclass
class ManifestStream:
    """One pass over a run's ``manifest.json``: ``head()`` (``run`` and ``shards``), then ``attempts()``,
    typed as ``tasks.rundir.finished_run`` reads the rest (the entries are not held at once)."""

    location: Location
    _events: Iterator[tuple[str, Any]] | None = None
    _pending: dict[str, Any] | None = None

    def head(self) -> ManifestHead:
        """``run`` and ``shards``, read up to the first attempt entry (both precede ``attempts``)."""
        self._events = top_level((line for _, _, line in self.location.iter_lines()), frozenset({"run", "shards"}), "attempts")
        head: dict[str, Any] = {}
        for key, value in self._events:
            if key == "attempts":
                self._pending = value
                break
            head[key] = value
            if len(head) == 2:
                break
        try:
            return ManifestHead.model_validate(head)
        except ValidationError as exc:
            raise ManifestError(f"{self.location.display}: no run and shards before its attempts") from exc

    def attempts(self) -> Iterator[AttemptEntry]:
        """The attempt entries in manifest order (after ``head()``)."""
        assert self._events is not None, "head() first"
        pending = [self._pending] if self._pending is not None else []
        self._pending = None
        entries = itertools.chain(pending, (value for key, value in self._events if key == "attempts"))
        for value in entries:
            try:
                yield AttemptEntry.model_validate(value)
            except ValidationError as exc:
                raise ManifestError(
                    f"{self.location.display}: an attempt entry without key, line, source and status: {value!r:.200}"
                ) from exc
