"""Deterministic OpenTelemetry ids for a run's rollouts.

A re-export must send the same trace and span ids, so a collector (MLflow upserts spans by id)
replaces what it holds instead of adding a copy. Ids are sha256 prefixes of the identity of the
thing they name: the trace of ``(job id, run id, attempt key)``, a span of that plus the span's
kind and record id. The run id is part of it because two runs of one job hold different
evidence for the same attempt key; sharing ids would merge their traces.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = ["TraceIdentity"]

_SEPARATOR = b"\x00"


def _digest(parts: tuple[str, ...], size: int) -> bytes:
    value = hashlib.sha256(_SEPARATOR.join(part.encode() for part in parts)).digest()[:size]
    # An all-zero id is invalid in OTLP; a sha256 prefix of zeros is practically impossible,
    # but the rule costs one line.
    return value if any(value) else b"\x00" * (size - 1) + b"\x01"


@dataclass(frozen=True, slots=True)
class TraceIdentity:
    """Where one enriched main row comes from: its job, its run and its attempt key (``main:<line>``)."""

    job_id: str
    run_id: str
    attempt_key: str

    @property
    def trace_id(self) -> bytes:
        """16 bytes naming the row's trace."""
        return _digest((self.job_id, self.run_id, self.attempt_key), 16)

    def span_id(self, kind: str, record_id: str) -> bytes:
        """8 bytes naming one span: ``kind`` (invocation, model_call, tool_call) and the record's id."""
        return _digest((self.job_id, self.run_id, self.attempt_key, kind, record_id), 8)
