"""Row-level health evaluation: one parsed row (or one unreadable line) to one ``RowDigest``.

This is 0.7.0's per-line worker. Gates run in registry order, the first that applies decides a
check's fate: unreadable record, unreadable trajectory, then the inputs it reads (trajectory,
turns, captured calls, a binding view), then the check itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from typing import Any

from evidence.health.calls import token_count
from evidence.health.chains import failed_chain_ends
from evidence.health.digest import RowDigest, RowStats, finding
from evidence.health.identity import Identity, InvalidIdentity, record_identity, unreadable_identity
from evidence.health.registry import (
    AGENT_TURNS,
    BOUND_CALLS,
    OBSERVED_MODEL_CALLS,
    OWNED_MODEL_CALLS,
    ROLLOUT_CHECKS,
    TRAJECTORY,
    CheckSpec,
)
from evidence.health.view import RowView, build_view

RECORD_UNREADABLE = "record_unreadable"
CHECK_EXECUTION_ERROR = "check_execution_error"


def evaluate_row(
    value: Any, *, source: str, line: int, ordinal: int, ignored: Collection[str], canonical_trajectory: bool = False
) -> RowDigest:
    """Evaluate one parsed JSONL value.

    Args:
        value: the parsed JSON value of the line (for the stage: the enriched row).
        source: the rollouts file as the user named it; unreadable-line locators quote it.
        line: the 1-based physical line number.
        ordinal: 0-based index among the file's non-blank lines (0.7.0's fallback task index).
        ignored: normalised ignored check ids.
        canonical_trajectory: the row's ``ng_trajectory`` is already in validated canonical
            form (see ``RowView``): skip validating it again.
    """
    if not isinstance(value, dict):
        return unreadable_row(source, line, "ValueError", ignored=ignored)
    try:
        identity = record_identity(value, ordinal)
    except InvalidIdentity as exc:  # 0.7.0 crashes the whole run here; we flag this row only
        detail = {"reason": "rollout identity is unreadable", "error": "ValidationError", "field": exc.field}
        return _unreadable(source, line, detail, ignored)
    view = build_view(value, canonical=canonical_trajectory)
    findings, unobserved = _run_checks(view, ignored)
    return RowDigest(
        identity.task,
        identity.rollout,
        identity.stage,
        identity.rollout_id,
        tuple(findings),
        tuple(unobserved),
        _stats(view),
    )


def unreadable_row(source: str, line: int, error: str, *, ignored: Collection[str]) -> RowDigest:
    """The digest of a line that is not a JSON object; ``error`` is the parse error class name."""
    return _unreadable(source, line, {"reason": "rollout record is unreadable", "error": error}, ignored)


def _unreadable(source: str, line: int, detail: dict[str, Any], ignored: Collection[str]) -> RowDigest:
    identity: Identity = unreadable_identity(line)
    findings = []
    if RECORD_UNREADABLE not in ignored:
        findings.append(finding(RECORD_UNREADABLE, {"source_file": source, "line": line}, detail))
    unobserved = tuple(spec.id for spec in ROLLOUT_CHECKS if spec.id not in ignored and spec.id != RECORD_UNREADABLE)
    return RowDigest(
        identity.task,
        identity.rollout,
        identity.stage,
        identity.rollout_id,
        tuple(findings),
        unobserved,
        RowStats(),
    )


def _run_checks(view: RowView, ignored: Collection[str]) -> tuple[list[dict[str, Any]], list[str]]:
    findings: list[dict[str, Any]] = []
    unobserved: list[str] = []
    for spec in ROLLOUT_CHECKS:
        if spec.id in ignored:
            continue
        if view.trajectory_error is not None and spec.id == RECORD_UNREADABLE:
            detail = {"reason": "canonical trajectory is unreadable", "error": view.trajectory_error}
            findings.append(finding(spec.id, None, detail))
            continue
        if not _observable(spec, view):
            unobserved.append(spec.id)
            continue
        if spec.run is None:
            continue
        try:
            flags = spec.run(view)
        except Exception as exc:  # noqa: BLE001 - 0.7.0 turns any crash of a check into evidence
            unobserved.append(spec.id)
            if CHECK_EXECUTION_ERROR not in ignored:
                findings.append(
                    finding(
                        CHECK_EXECUTION_ERROR,
                        None,
                        {
                            "reason": "check raised an unexpected exception",
                            "failed_check": spec.id,
                            "error": type(exc).__name__,
                        },
                    )
                )
            continue
        if flags is None:
            unobserved.append(spec.id)
        else:
            findings.extend(finding(spec.id, flag.locator, flag.detail) for flag in flags)
    return findings, unobserved


def _observable(spec: CheckSpec, view: RowView) -> bool:
    """The generic gates: can the inputs this check reads be observed on this row?"""
    if TRAJECTORY in spec.inputs and not view.trajectory_observed:
        return False
    if AGENT_TURNS in spec.inputs and not view.turns_observed:
        return False
    if OBSERVED_MODEL_CALLS in spec.inputs and not (view.model_calls_observed and view.calls):
        return False
    binding = view.owned_view if OWNED_MODEL_CALLS in spec.inputs else view.turn_view if BOUND_CALLS in spec.inputs else None
    if binding is None:
        return True
    if not view.model_calls_observed:
        return False
    if spec.judges_references:
        return binding.observed or bool(view.contradiction_gaps)
    return bool(binding.matched)


def _stats(view: RowView) -> RowStats:
    calls = view.calls
    failed = [call for call in calls if call.failed]
    identities = Counter(call.identity for call in calls if call.identity is not None)
    return RowStats(
        capture_observed=bool(calls),
        policy_calls_observed=view.turn_call_scope_complete and view.turn_view.complete,
        successful_model_calls=sum(call.successful for call in view.turn_view.matched),
        model_call_errors=len(failed),
        errors_by_status=dict(Counter("unknown" if call.status_code is None else str(call.status_code) for call in failed)),
        ended_on_error=bool(failed_chain_ends(calls)),
        duplicated_calls=sum(count - 1 for count in identities.values() if count > 1),
        transcript_prompt=view.usage.prompt,
        transcript_completion=view.usage.completion,
        capture_prompt=sum(token_count(call.tokens_in) for call in calls),
        capture_completion=sum(token_count(call.tokens_out) for call in calls),
    )
