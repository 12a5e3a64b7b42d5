"""Where per-attempt parts live under ``<run>/attempts/``, and reading one back.

The format itself (a typed, versioned encoding of the attempt's outcome) is
:mod:`evidence.attempt.part`; this module only places parts in storage. A part that exists is
complete (atomic write), so resume and task retries can trust it.
"""

from __future__ import annotations

from evidence import AttemptPart, PartError, decode_part
from tasks.storage import Location

ATTEMPTS_FOLDER = "attempts"


def part_location(run_dir: Location, source: str, line: int) -> Location:
    """Where an attempt's part lives: named by its key (source, line), never by its rollout id."""
    return run_dir.child(ATTEMPTS_FOLDER, source, f"{line:09d}.part")


def read_part(location: Location) -> AttemptPart:
    """The part at ``location``; ``PartError`` when it is not a part of this version."""
    return decode_part(location.read_bytes())


def current_part(location: Location, fingerprint: str) -> bool:
    """Whether a part exists there and was made from the attempt as it is now (its fingerprint).

    A part of another format version counts as absent: the attempt is redone.
    """
    if not location.exists():
        return False
    try:
        return read_part(location).fingerprint == fingerprint
    except PartError:
        return False
