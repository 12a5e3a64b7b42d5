"""Exceptions raised by the evidence library.

Hierarchy::

    EvidenceError                 base of everything evidence raises on purpose
    ├── RowRejected               0.7.0 raises on this row; the row passes through unchanged
    └── AtifExportError           a row (or a batch) cannot be exported to ATIF

A content problem is never retried: it becomes evidence (a gap, a finding, a rejection) or a
reported bad attempt. Storage problems live in ``tasks.storage`` and are retried there.
"""

from __future__ import annotations


class EvidenceError(Exception):
    """Base class of every exception the evidence library raises deliberately."""


class RowRejected(EvidenceError):
    """0.7.0 raises while collecting this row; we report it and keep the row unchanged.

    ``kind`` is the class name 0.7.0 raises (``ValueError``, ``TypeError``) and ``message`` its
    exact text, so the manifest reason can quote 0.7.0 verbatim.
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message

    def __reduce__(self) -> tuple[type[RowRejected], tuple[str, str]]:
        return (RowRejected, (self.kind, self.message))


class AtifExportError(EvidenceError):
    """A rollout (or a batch) is refused by the strict ATIF v1.7 export; ``message`` is 0.7.0's text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __reduce__(self) -> tuple[type[AtifExportError], tuple[str]]:
        return (AtifExportError, (self.message,))
