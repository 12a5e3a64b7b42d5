"""Per-attempt output files ("parts"): one atomic object per attempt under ``<run>/attempts/``.

Layout: a JSON header line (status, fingerprint, digests, blob lengths), then the blobs back to
back (the enriched row line, the ATIF file). Blobs stay raw bytes: no JSON-in-JSON escaping of
multi-megabyte rows. A part that exists is complete (atomic write), so resume and task retries
can trust it.
"""

from __future__ import annotations

from typing import Any

import orjson

from tasks.storage import Location

ATTEMPTS_FOLDER = "attempts"


def part_location(run_dir: Location, source: str, line: int) -> Location:
    """Where an attempt's part lives: named by its key (source, line), never by its rollout id."""
    return run_dir.child(ATTEMPTS_FOLDER, source, f"{line:09d}.part")


def encode_part(header: dict[str, Any], blobs: list[bytes]) -> bytes:
    """Header line + blobs; the header records each blob's length."""
    head = orjson.dumps({**header, "blob_lengths": [len(b) for b in blobs]})
    return b"".join([head, b"\n", *blobs])


def decode_part(data: bytes) -> tuple[dict[str, Any], list[bytes]]:
    """Inverse of ``encode_part``."""
    end = data.index(b"\n")
    header = orjson.loads(data[:end])
    blobs: list[bytes] = []
    position = end + 1
    for length in header["blob_lengths"]:
        blobs.append(data[position : position + length])
        position += length
    return header, blobs
