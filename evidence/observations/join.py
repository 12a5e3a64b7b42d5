"""Resolve an agent's model-call references against the captured calls (spec: §6).

A reference resolves only to exactly one captured call, by the collection rule
(``evidence.references.CallIndex``). An invocation owns the calls its refs resolve to first;
compactions point at calls but never own them. Every failure is a gap on the bundle; stale join
gaps from an earlier join are dropped first, so joining twice gives the same bundle.
"""

from __future__ import annotations

from collections.abc import Sequence

from evidence.gaps import (
    MODEL_CALL_OWNERSHIP_UNAVAILABLE,
    MODEL_CALL_REFERENCE_AMBIGUOUS,
    MODEL_CALL_REFERENCE_CONFLICT,
    MODEL_CALL_REFERENCE_UNMATCHED,
)
from evidence.models.capture import ModelCallRecord
from evidence.models.observations import (
    AgentInvocationRecord,
    AgentObservationBundle,
    ContextCompactionRecord,
    ModelCallRef,
    ObservationGap,
    ObservationRecord,
)
from evidence.references import CallIndex, record_name, ref_name

__all__ = ["canonical_ref", "join_model_call_observations"]

_JOIN_CODES = frozenset({MODEL_CALL_REFERENCE_UNMATCHED, MODEL_CALL_REFERENCE_AMBIGUOUS, MODEL_CALL_REFERENCE_CONFLICT})


def canonical_ref(call: ModelCallRecord) -> ModelCallRef:
    """The full ref of a captured call (what a resolved reference is rewritten to)."""
    return ModelCallRef.model_construct(model_call_id=call.model_call_id, model_ref=call.model_ref, response_id=call.response_id)


def _call_label(call: ModelCallRecord) -> str | None:
    return call.model_call_id or call.response_id


def _ref_label(ref: ModelCallRef) -> str | None:
    return ref.model_call_id or ref.response_id


def _add_session_refs(invocations: list[AgentInvocationRecord], calls: Sequence[ModelCallRecord]) -> dict[str, list[ModelCallRef]]:
    """Each invocation's refs plus the calls its client session id claims (§6.2)."""
    refs = {invocation.invocation_id: list(invocation.model_calls) for invocation in invocations}
    for call in calls:
        session = call.client_session_id
        if not session or not call.model_call_id or session not in refs:
            continue
        model_ref, response_id = call.model_ref_key(), call.response_id
        known = {ref.key() for ref in refs[session]}
        equivalent: set[tuple[str | None, tuple[str, str] | None, str | None]] = {
            (call.model_call_id, ref_form, response_form) for ref_form in (None, model_ref) for response_form in (None, response_id)
        }
        if model_ref is not None and response_id is not None:
            equivalent.add((None, model_ref, response_id))
        if known.isdisjoint(equivalent):
            refs[session].append(canonical_ref(call))
    return refs


class _Join:
    """One join pass: ownership claimed in reference order, gaps in emission order."""

    def __init__(self, calls: Sequence[ModelCallRecord]) -> None:
        self.calls = calls
        self.index = CallIndex([record_name(call) for call in calls])
        self.owner: dict[int, str] = {}
        self.gaps: list[ObservationGap] = []

    def candidates(self, ref: ModelCallRef) -> list[ModelCallRecord]:
        """The captured calls ``ref`` may name, by the collection rule; exactly one is a match."""
        return [self.calls[position] for position in self.index.candidates(ref_name(ref))]

    def _gap(self, code: str, invocation_id: str | None, detail: str | None) -> None:
        self.gaps.append(ObservationGap.model_construct(code=code, invocation_id=invocation_id, detail=detail))

    def _unresolved(self, candidates: list[ModelCallRecord], invocation_id: str, detail: str | None) -> None:
        code = MODEL_CALL_REFERENCE_UNMATCHED if not candidates else MODEL_CALL_REFERENCE_AMBIGUOUS
        self._gap(code, invocation_id, detail)

    def invocation_refs(self, invocation_id: str, refs: list[ModelCallRef]) -> list[ModelCallRef]:
        joined = []
        for ref in refs:
            candidates = self.candidates(ref)
            if len(candidates) != 1:
                self._unresolved(candidates, invocation_id, _ref_label(ref))
                joined.append(ref)
            elif candidates[0].call_index in self.owner:
                self._gap(MODEL_CALL_REFERENCE_CONFLICT, invocation_id, _call_label(candidates[0]))
                joined.append(ref)
            else:
                self.owner[candidates[0].call_index] = invocation_id
                joined.append(canonical_ref(candidates[0]))
        return joined

    def compaction_ref(self, compaction: ContextCompactionRecord, field: str, ref: ModelCallRef) -> ModelCallRef:
        """A before/after ref: canonical unless another invocation owns its call."""
        candidates = self.candidates(ref)
        if len(candidates) != 1:
            self._unresolved(candidates, compaction.invocation_id, f"{field}:{_ref_label(ref)}")
            return ref
        owner = self.owner.get(candidates[0].call_index)
        if owner is not None and owner != compaction.invocation_id:
            self._gap(MODEL_CALL_REFERENCE_CONFLICT, compaction.invocation_id, f"{field}:{_call_label(candidates[0])}")
            return ref
        return canonical_ref(candidates[0])

    def compaction_calls(self, compaction: ContextCompactionRecord) -> list[ModelCallRef]:
        """``model_calls`` of a compaction: canonical only for calls its invocation owns."""
        joined = []
        for ref in compaction.model_calls:
            candidates = self.candidates(ref)
            if len(candidates) != 1:
                self._unresolved(candidates, compaction.invocation_id, f"model_calls:{_ref_label(ref)}")
                joined.append(ref)
                continue
            owner = self.owner.get(candidates[0].call_index)
            if owner == compaction.invocation_id:
                joined.append(canonical_ref(candidates[0]))
                continue
            code = MODEL_CALL_OWNERSHIP_UNAVAILABLE if owner is None else MODEL_CALL_REFERENCE_CONFLICT
            self._gap(code, compaction.invocation_id, f"model_calls:{_call_label(candidates[0])}")
            joined.append(ref)
        return joined

    def compaction(self, compaction: ContextCompactionRecord) -> ContextCompactionRecord:
        update: dict[str, object] = {"model_calls": self.compaction_calls(compaction)}
        for field in ("before_model_call", "after_model_call"):
            ref = getattr(compaction, field)
            if ref is not None:
                update[field] = self.compaction_ref(compaction, field, ref)
        return compaction.model_copy(update=update)

    def unowned_gaps(self) -> None:
        for call in self.calls:
            if call.call_index not in self.owner:
                label = _call_label(call) or "unknown"
                self._gap(MODEL_CALL_OWNERSHIP_UNAVAILABLE, None, f"capture:{label}:call_index={call.call_index}")


def _is_stale_join_gap(gap: ObservationGap) -> bool:
    """Gaps a previous join produced; recomputed from scratch on every join."""
    if gap.code in _JOIN_CODES:
        return True
    return (
        gap.code == MODEL_CALL_OWNERSHIP_UNAVAILABLE
        and gap.invocation_id is None
        and gap.detail is not None
        and gap.detail.startswith("capture:")
    )


def dedupe_gaps(gaps: list[ObservationGap]) -> list[ObservationGap]:
    """First occurrence of each ``(code, invocation_id, detail)`` wins."""
    seen: set[tuple[str, str | None, str | None]] = set()
    unique = []
    for gap in gaps:
        if gap.key() not in seen:
            seen.add(gap.key())
            unique.append(gap)
    return unique


def join_model_call_observations(bundle: AgentObservationBundle, calls: Sequence[ModelCallRecord]) -> AgentObservationBundle:
    """Return the bundle with refs resolved and join gaps recomputed (the input is not changed)."""
    join = _Join(calls)
    session_refs = _add_session_refs(bundle.invocations(), calls)
    records: list[ObservationRecord] = []
    for record in bundle.records:
        if isinstance(record, AgentInvocationRecord):
            joined = join.invocation_refs(record.invocation_id, session_refs[record.invocation_id])
            records.append(record.model_copy(update={"model_calls": joined}))
        else:
            records.append(record)
    records = [join.compaction(record) if isinstance(record, ContextCompactionRecord) else record for record in records]
    join.unowned_gaps()
    kept = [gap for gap in bundle.gaps if not _is_stale_join_gap(gap)]
    return bundle.model_copy(update={"records": records, "gaps": dedupe_gaps(kept + join.gaps)})
