"""Normalising the list of ignored health checks exactly as 0.7.0 does.

The CLI prints the error message verbatim and exits like ``gym eval health-check``, so both the
normalisation and the message text are part of the contract.
"""

from __future__ import annotations

from collections.abc import Iterable

from evidence.errors import EvidenceError
from evidence.health.registry import CHECKS


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
