"""Normalising the list of ignored health checks exactly as 0.7.0 does.

The CLI prints the error message verbatim and exits like ``gym eval health-check``, so both the
normalisation and the message text are part of the contract.
"""

from __future__ import annotations

from collections.abc import Iterable

from evidence.errors import EvidenceError
from evidence.health.registry import CHECKS

EMPTY_ENTRY = "check IDs must be a comma-separated list without empty entries"


class UnknownHealthCheck(EvidenceError, ValueError):
    """An ignore list names a check id that is not registered; ``unknown`` is sorted."""

    def __init__(self, unknown: tuple[str, ...]) -> None:
        super().__init__(f"Unknown rollout health check(s): {', '.join(unknown)}")
        self.unknown = unknown

    def __reduce__(self) -> tuple[type[UnknownHealthCheck], tuple[tuple[str, ...]]]:
        return (UnknownHealthCheck, (self.unknown,))


def normalize_ignored_checks(ids: str | Iterable[str] | None) -> tuple[str, ...]:
    """Return the ignored ids: comma-split if a string, stripped, blanks dropped, first kept.

    Raises:
        UnknownHealthCheck: some id is not one of the 14 registered checks.
    """
    items = ids.split(",") if isinstance(ids, str) else (ids or ())
    normalized = tuple(dict.fromkeys(stripped for item in items if (stripped := item.strip())))
    unknown = sorted(set(normalized) - set(CHECKS))
    if unknown:
        raise UnknownHealthCheck(tuple(unknown))
    return normalized


def split_check_ids(value: str) -> list[str]:
    """One ``--ignore-check`` value as 0.7.0's parser reads it: one id, or ids separated by commas.

    Raises:
        ValueError: an entry is empty or blank (``"a,,b"``, ``"a,"``), with 0.7.0's message.
    """
    parts = value.split(",")
    if any(not part.strip() for part in parts):
        raise ValueError(EMPTY_ENTRY)
    return parts


def parse_ignored_checks(values: Iterable[str]) -> tuple[str, ...]:
    """The ignore list from repeated option values or list entries, each split like one
    ``--ignore-check`` value, then normalised: the one rule of the drop-in, ``run``, ``batch``,
    the deployments and the UI form.

    Raises:
        ValueError: an empty entry; ``UnknownHealthCheck`` (a ValueError) for an unknown id.
    """
    return normalize_ignored_checks([part for value in values for part in split_check_ids(value)])
