"""The one tree of exceptions evidence-stage raises on purpose, rooted here.

Hierarchy (where each class lives)::

    StageError                      base of every deliberate refusal or failure (here)
    ├── EvidenceError               the pure library's (here)
    │   ├── RowRejected             0.7.0 raises on this row; the row passes through unchanged
    │   ├── AtifExportError         a row (or a batch) cannot be exported to ATIF
    │   └── PartError               bytes that are not an attempt part of this version (evidence.attempt.part)
    ├── StorageError                talking to storage failed; ``url`` names the object (tasks.storage.base)
    │   ├── TransientStorageError   may succeed when tried again: retried
    │   └── PermanentStorageError   retrying cannot fix it
    │       ├── UnknownStorageOption  a storage option the store does not take (tasks.storage.base)
    │       ├── InputNotFound       a required input does not exist
    │       └── PartMissing         an attempt's part is not where its index says (tasks.attempts.parts)
    ├── RunConflict                 the run cannot start: id taken, resume disagrees, outputs among inputs (tasks.rundir)
    ├── NoSpace                     a run's disk filled: which folder, what the run needs (flows.execution.nospace)
    ├── GateFailed                  the run was published but its quality gate failed (tasks.publish.gate)
    └── ExportError                 an export that cannot go on (tasks.export.run_dir)
        └── ExtraMissing            an optional client library is not installed

Parameter models refuse values with ``ValueError`` (pydantic's validators need it); the CLI
turns any such refusal, like every ``StageError``, into one ``evidence-stage: error:`` line.
``flows.params.gate.GateError`` is one: a ``ValueError`` only, because the parameter models load
with the CLI and this library must not.

A content problem is never retried: it becomes evidence (a gap, a finding, a rejection) or a
reported bad attempt. Storage problems are retried in ``tasks.storage``. Classes that callers
also catch as a built-in kind keep it as a second base (``PartError`` is a ``ValueError``,
``ExportError`` a ``RuntimeError``).
"""

from __future__ import annotations


class StageError(Exception):
    """Base class of every exception evidence-stage raises deliberately (the tree above)."""


class EvidenceError(StageError):
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


REASON_LIMIT = 500
"""Longest manifest reason we write: an exception message can quote a whole row."""


def failure_reason(exc: BaseException, step: str) -> str:
    """``ExceptionType: message (in <step>)``, its ``ExceptionType: message`` cut to ``REASON_LIMIT`` characters."""
    text = f"{type(exc).__name__}: {exc}"
    if len(text) > REASON_LIMIT:
        text = text[: REASON_LIMIT - 1] + "\u2026"
    return f"{text} (in {step})"
