"""Binding trajectory references to canonical model calls (0.7.0's two binding views).

The *turn view* ("bound calls") resolves the turns' references; the *owned view* resolves the
turns' references followed by the invocations'. A check reads at most one of the two.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from evidence.health.calls import CallView
from evidence.references import CallIndex, json_name, json_ref_name


@dataclass(frozen=True, slots=True)
class Binding:
    """The outcome of resolving a list of references against the calls."""

    references: tuple[str, ...]
    matched: tuple[CallView, ...]
    missing: tuple[str, ...]
    duplicated: tuple[tuple[str, int], ...]

    @property
    def observed(self) -> bool:
        return bool(self.references)

    @property
    def complete(self) -> bool:
        return self.observed and not self.missing and not self.duplicated


EMPTY_BINDING = Binding((), (), (), ())


def turn_refs(trajectory: dict[str, Any]) -> list[dict[str, Any]]:
    """Every turn reference in order, de-duplicated by signature."""
    return _dedupe(ref for turn in trajectory["turns"] for ref in turn.get("model_calls") or ())


def owned_refs(trajectory: dict[str, Any]) -> list[dict[str, Any]]:
    """Turn references then invocation references, de-duplicated by signature together."""
    invocation_refs = (ref for invocation in trajectory["invocations"] for ref in invocation.get("model_calls") or ())
    return _dedupe([*turn_refs(trajectory), *invocation_refs])


def reference_key(ref: Any) -> str | None:
    """``call:<id>``, else ``response:<type>:<name>:<response_id>``; None for unusable refs."""
    if not isinstance(ref, dict):
        return None
    if ref.get("model_call_id"):
        return f"call:{ref['model_call_id']}"
    model_ref = ref.get("model_ref")
    if isinstance(model_ref, dict) and ref.get("response_id"):
        return f"response:{model_ref.get('type')}:{model_ref.get('name')}:{ref['response_id']}"
    return None


def call_index(calls: Sequence[CallView]) -> CallIndex:
    """The calls findable by the collection rule (``evidence.references.CallIndex``), for :func:`bind`.

    Their names are read from the canonical dumps, which are validated, so reading them as
    JSON objects changes nothing.
    """
    return CallIndex([json_name(call.model_call_id, call.model_ref, call.response_id) for call in calls])


def bind(refs: Sequence[dict[str, Any]], calls: Sequence[CallView], index: CallIndex) -> Binding:
    """Resolve each keyed reference to exactly one call, or record it missing / duplicated.

    ``index``: ``call_index(calls)``, made once for both binding views.
    """
    references: list[str] = []
    matched: dict[int, CallView] = {}
    missing: list[str] = []
    duplicated: list[tuple[str, int]] = []
    for ref in refs:
        key = reference_key(ref)
        if key is None:
            continue
        references.append(key)
        candidates = index.candidates(json_ref_name(ref))
        if not candidates:
            missing.append(key)
        elif len(candidates) > 1:
            duplicated.append((key, len(candidates)))
        else:
            matched[calls[candidates[0]].position] = calls[candidates[0]]
    ordered = tuple(matched[position] for position in sorted(matched))
    return Binding(tuple(references), ordered, tuple(missing), tuple(duplicated))


def _signature(ref: dict[str, Any]) -> tuple[str, str, str, str]:
    model_ref = ref.get("model_ref") or {}
    return (
        ref.get("model_call_id") or "",
        model_ref.get("type") or "",
        model_ref.get("name") or "",
        ref.get("response_id") or "",
    )


def _dedupe(refs: Iterable[Any]) -> list[dict[str, Any]]:
    unique: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for ref in refs:
        if isinstance(ref, dict):
            unique.setdefault(_signature(ref), ref)
    return list(unique.values())
