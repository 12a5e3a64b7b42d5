"""The run's judgement of a row as table columns: its ATIF outcome, its health verdict and findings,
and where its verdict line sorts (how ``tasks/tables`` pairs rows with ``rollout_verdicts.jsonl``).

What the row itself gives the tables is ``rows.py``; these columns exist only once the run has
judged every row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evidence.health.identity import InvalidIdentity, record_identity, unreadable_identity
from evidence.health.registry import CHECKS
from evidence.jsonl import deep_retry
from evidence.tables.values import as_int, as_list, as_object, as_str, as_text

__all__ = [
    "EXPORTED",
    "NO_ATIF",
    "NO_VERDICT",
    "REFUSED",
    "WITHHELD",
    "atif_columns",
    "finding_rows",
    "verdict_columns",
    "verdict_line_order",
    "verdict_order",
]

EXPORTED, REFUSED, WITHHELD = "exported", "refused", "withheld"
NO_ATIF: tuple[None, None, None] = (None, None, None)
"""The ATIF columns of a sidecar row (the export reads main rows only)."""
NO_VERDICT: tuple[None, None, None] = (None, None, None)
"""The verdict columns of a row health did not judge (a sidecar row, a main row without a digest)."""


def atif_columns(file: str | None, refusal: str | None) -> tuple[str, str | None, str | None]:
    """A main row's ATIF columns: exported to ``file``, refused with ``refusal``, or neither (withheld)."""
    if refusal is not None:
        return (REFUSED, None, refusal)
    if file is not None:
        return (EXPORTED, file, None)
    return (WITHHELD, None, None)


def verdict_columns(verdict: Mapping[str, Any] | None) -> tuple[str | None, int | None, list[str | None] | None]:
    """A main row's verdict columns from its line of ``rollout_verdicts.jsonl`` (None: no verdict)."""
    if verdict is None:
        return NO_VERDICT
    return (as_str(verdict.get("verdict")), len(as_list(verdict.get("findings"))), [as_str(c) for c in as_list(verdict.get("unobserved"))])


def finding_rows(verdict: Mapping[str, Any] | None, keys: Sequence[str]) -> list[tuple[Any, ...]]:
    """The ``findings`` rows of a verdict line; ``keys``: the attempt's four key columns."""
    if verdict is None:
        return []
    rows = []
    for index, entry in enumerate(as_list(verdict.get("findings"))):
        finding = entry if isinstance(entry, Mapping) else {}
        check = as_str(finding.get("check"))
        spec = CHECKS.get(check) if check is not None else None
        locator = as_object(finding.get("locator"))
        detail = as_object(finding.get("detail"))
        rows.append(
            (
                *keys,
                index,
                check if check is not None else "",
                spec.subject if spec is not None else None,
                as_text(finding.get("locator")),
                as_int(locator.get("turn")) if locator is not None else None,
                as_str(locator.get("call_id")) if locator is not None else None,
                as_text(finding.get("detail")),
                as_str(detail.get("reason")) if detail is not None else None,
            )
        )
    return rows


def verdict_order(row: Mapping[str, Any] | None, output_line: int) -> tuple[tuple[int, Any], ...]:
    """Where a main row's verdict line sorts in ``rollout_verdicts.jsonl``: its health identity,
    ordered as ``evidence.health.verdict_order`` orders digests.

    The identity is the one health gives the row at ``output_line`` of ``rollouts.jsonl``
    (``record_identity`` with that line's ordinal; the unreadable identity for a line that
    did not decode or an identity 0.7.0 cannot type). Lines of equal identities keep the
    order of their rows, so the n-th row of an identity owns the n-th line of it.
    """
    if not isinstance(row, Mapping):
        identity = unreadable_identity(output_line)
    else:
        try:
            identity = deep_retry(lambda: record_identity(dict(row), output_line - 1))  # its rollout id is str() of raw values
        except InvalidIdentity:
            identity = unreadable_identity(output_line)
    return _order((identity.task, identity.rollout, identity.stage))


def verdict_line_order(verdict: Mapping[str, Any]) -> tuple[tuple[int, Any], ...]:
    """Where a line of ``rollout_verdicts.jsonl`` sorts, by the identity it states."""
    return _order((verdict.get("_ng_task_index"), verdict.get("_ng_rollout_index"), verdict.get("stage_index")))


def _order(parts: tuple[Any, Any, Any]) -> tuple[tuple[int, Any], ...]:
    """``evidence.health.verdict_order`` of (task, rollout, stage): ints first, then string forms."""
    return tuple((0, part) if isinstance(part, int) else (1, str(part)) for part in parts)
