"""When a comparison should not be taken at face value, from the two runs' own evidence.

Four reasons: a side whose quality gate failed (``gate.json``; a run without one is
``unknown``, not a reason), a side that landed a smaller share of its expected rollouts than
the other (``accounting.json``), a capability dimension whose status changed (the figures that
rely on it compare unlike evidence, e.g. token deltas when token counts went full → partial), and
different config fingerprints (``manifest.json``: the runs were not processed alike).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evidence.capabilities import DIMENSION_LABELS
from evidence.capabilities.values import as_dict, is_int
from evidence.compare.model import CapabilityChange, Side, TrustIssue, TrustReport
from evidence.compare.run import RunEvidence

__all__ = ["gate_status", "landed_share", "side_of", "trust_report"]


def gate_status(gate: Mapping[str, Any] | None) -> str:
    """``passed``, ``failed`` or ``unknown`` (no ``gate.json``, or one without a verdict).

    The verdict is a boolean ``passed`` or a ``status`` of ``passed``/``failed``.
    """
    document = as_dict(gate)
    if isinstance(document.get("passed"), bool):
        return "passed" if document["passed"] else "failed"
    status = document.get("status")
    return status if status in ("passed", "failed") else "unknown"


def landed_share(accounting: Mapping[str, Any] | None) -> float | None:
    """``landed / expected`` from ``accounting.json``; None when either is unknown."""
    document = as_dict(accounting)
    expected, landed = document.get("expected"), document.get("landed")
    if is_int(expected) and is_int(landed) and expected > 0:
        return landed / expected
    return None


def side_of(run: RunEvidence) -> Side:
    """A side's identity and the trust facts of its own evidence."""
    finished = run.manifest
    return Side(
        run_dir=run.location,
        job_id=finished.run.job_id,
        run_id=finished.run.run_id,
        config_fingerprint=finished.config_fingerprint,
        gate=gate_status(run.gate),
        landed_share=landed_share(run.accounting),
    )


def trust_report(sides: tuple[Side, Side], runs: tuple[RunEvidence, RunEvidence], capabilities: Sequence[CapabilityChange]) -> TrustReport:
    """Every reason found not to trust the comparison; trusted when there is none."""
    issues = [
        TrustIssue("gate_failed", name, f"run {name.upper()} failed its quality gate (gate.json)")
        for name, side in zip("ab", sides, strict=True)
        if side.gate == "failed"
    ]
    shares = [side.landed_share for side in sides]
    if None not in shares and shares[0] != shares[1]:
        low = "a" if shares[0] < shares[1] else "b"  # type: ignore[operator]
        mine, other = (shares[0], shares[1]) if low == "a" else (shares[1], shares[0])
        issues.append(
            TrustIssue("landed_share_lower", low, f"run {low.upper()} landed {mine:.1%} of its expected rollouts, the other {other:.1%}")
        )
    for entry in capabilities:
        if entry.a is not None and entry.b is not None:
            detail = (
                f"{entry.agent}: {DIMENSION_LABELS[entry.dimension]} went {entry.a} \u2192 {entry.b}; "
                "figures that rely on it compare unlike evidence"
            )
            issues.append(TrustIssue("capability_changed", None, detail))
    fingerprints = [side.config_fingerprint for side in sides]
    if fingerprints[0] != fingerprints[1]:
        params = [run.manifest.parameters.to_json() for run in runs]
        differing = sorted(k for k in {*params[0], *params[1]} if params[0].get(k) != params[1].get(k))
        issues.append(
            TrustIssue(
                "config_differs", None, f"config fingerprints differ (parameters that differ: {', '.join(differing) or 'none recorded'})"
            )
        )
    return TrustReport(trusted=not issues, issues=issues)
