"""Raw preflight of ``ng_trajectory``: refuse fields that the typed parse would silently drop.

The Responses item models ignore unknown keys, so without this pass an exporter could lose
producer data without noticing. It runs on the decoded row before the strict parse and only
looks at objects and lists; anything else is left for the parse to judge.

The turns copy the root conversation (each question is its whole prefix so far), so most of
their items are conversation items again: the pass finds those (:class:`CopyMatches`), which
it has checked as conversation items already.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evidence.errors import AtifExportError
from evidence.roundtrip import leaves

__all__ = ["CopyMatches", "preflight_trajectory", "unsupported_fields_message"]

_COPIES = ("question", "answer", "reasoning_content")
"""A turn's copies of the root conversation, in 0.7.0's visiting order."""

_TRAINING_KEYS = frozenset({"prompt_token_ids", "generation_token_ids", "generation_log_probs", "routed_experts"})
_ITEM_TYPES = frozenset({"message", "reasoning", "function_call", "function_call_output"})
_MODEL_REF_KEYS = frozenset({"type", "name"})
_TEXT_PART_KEYS = frozenset({"type", "text"})
_OUTPUT_TEXT_KEYS = frozenset({"type", "text", "annotations", "logprobs"})
_SOURCE_ROLES = frozenset({"system", "user", "developer"})

# item kind -> allowed item keys, and the part lists whose parts of a given type are key-checked
_ALLOWED_KEYS: Mapping[str, frozenset[str]] = {
    "assistant": frozenset({"id", "content", "role", "status", "type", "phase"}) | _TRAINING_KEYS,
    "source": frozenset({"content", "role", "status", "type", "phase"}) | _TRAINING_KEYS,
    "reasoning": frozenset({"id", "summary", "type", "encrypted_content", "content"}) | _TRAINING_KEYS,
    "function_call": frozenset({"arguments", "call_id", "name", "type", "id", "status", "namespace"}) | _TRAINING_KEYS,
    "function_call_output": frozenset({"call_id", "output", "type", "id", "status"}),
}
_PART_RULES: Mapping[str, tuple[tuple[str, Mapping[str, frozenset[str]]], ...]] = {
    "assistant": (("content", {"output_text": _OUTPUT_TEXT_KEYS}),),
    "source": (("content", {"input_text": _TEXT_PART_KEYS}),),
    "reasoning": (
        ("summary", {"summary_text": _TEXT_PART_KEYS, "reasoning_text": _TEXT_PART_KEYS}),
        ("content", {"summary_text": _TEXT_PART_KEYS, "reasoning_text": _TEXT_PART_KEYS}),
    ),
    "function_call_output": (("output", {"input_text": _TEXT_PART_KEYS}),),
}


def unsupported_fields_message(path: str, keys: set[str] | frozenset[str]) -> str:
    """0.7.0's text for keys that would be dropped: repr-quoted, sorted, comma-joined."""
    return f"{path}: unsupported fields would be dropped: " + ", ".join(repr(k) for k in sorted(keys))


def _check_keys(obj: Mapping[str, Any], allowed: frozenset[str], path: str) -> None:
    extra = obj.keys() - allowed
    if extra:
        raise AtifExportError(unsupported_fields_message(path, extra))


def _check_model_ref(holder: Any, path: str) -> None:
    if isinstance(holder, dict) and isinstance(holder.get("model_ref"), dict):
        _check_keys(holder["model_ref"], _MODEL_REF_KEYS, f"{path}.model_ref")


def _check_model_call_refs(owner: Mapping[str, Any], path: str) -> None:
    refs = owner.get("model_calls")
    if isinstance(refs, list):
        for index, ref in enumerate(refs):
            _check_model_ref(ref, f"{path}.model_calls[{index}]")


def _check_parts(parts: Any, rules: Mapping[str, frozenset[str]], path: str) -> None:
    if not isinstance(parts, list):
        return
    for index, part in enumerate(parts):
        if not isinstance(part, dict):
            continue
        part_type = part.get("type")
        if not isinstance(part_type, str) or not part_type.strip():
            raise AtifExportError(f"{path}[{index}].type: expected a non-empty supported content-part type")
        allowed = rules.get(part_type)
        if allowed is not None:
            _check_keys(part, allowed, f"{path}[{index}]")


def _item_kind(item_type: str, item: Mapping[str, Any]) -> str | None:
    if item_type != "message":
        return item_type
    role = item.get("role")
    if role == "assistant":
        return "assistant"
    return "source" if isinstance(role, str) and role in _SOURCE_ROLES else None  # any other role: the parse refuses it


def _check_item(item: Mapping[str, Any], path: str) -> None:
    training = sorted(item.keys() & _TRAINING_KEYS)
    if training:
        raise AtifExportError(
            f"{path}: training token IDs, log probabilities, and routed-expert metadata are "
            f"outside the initial ATIF export profile (found: {', '.join(training)})"
        )
    item_type = item.get("type")
    if not isinstance(item_type, str) or not item_type.strip():
        raise AtifExportError(f"{path}.type: expected a non-empty supported conversation item type")
    if item_type not in _ITEM_TYPES:
        raise AtifExportError(f"{path}.type: unsupported conversation item type {item_type!r}")
    kind = _item_kind(item_type, item)
    if kind is None:
        return
    _check_keys(item, _ALLOWED_KEYS[kind], path)
    if kind in ("assistant", "source") and item.get("phase") is not None:
        raise AtifExportError(f"{path}.phase: Responses message phase is not representable in ATIF v1.7")
    if kind == "source" and "status" in item and not isinstance(item.get("content"), list):
        raise AtifExportError(f"{path}.status: source-message status is only supported with multipart content")
    if kind == "function_call" and item.get("namespace") is not None:
        raise AtifExportError(f"{path}.namespace: namespaced Responses function calls are not representable in ATIF v1.7")
    for field, rules in _PART_RULES.get(kind, ()):
        _check_parts(item.get(field), rules, f"{path}.{field}")


def _check_conversation(items: Any, path: str) -> None:
    if not isinstance(items, list):
        return
    for index, item in enumerate(items):
        if isinstance(item, dict):
            _check_item(item, f"{path}[{index}]")


@dataclass(frozen=True, slots=True)
class CopyMatches:
    """Where the turns' copies are the root conversation's own items.

    A turn copies the root conversation: its question is every item before its agent step, its
    reasoning and its answer are that step's items. ``turns[t][copy]`` is the span of
    conversation positions whose items turn ``t``'s ``copy`` equals, one for one, where it does.
    Such a copy passes the preflight as those items did and parses to what theirs parse to (up
    to key order, which ``json_equal`` ignores), so it is neither checked nor parsed again.

    Equal is Python's ``==`` on items holding no number and no boolean (only objects, arrays,
    strings and nulls): there ``==`` tells the types apart too, where ``true == 1 == 1.0``
    would hide a copy 0.7.0 refuses.
    """

    turns: list[dict[str, range]]

    def same_items(self, turn: int, copy: str, span: range) -> bool:
        """Whether turn ``turn``'s ``copy`` equals the root conversation's items at ``span``."""
        found = self.turns[turn].get(copy) if turn < len(self.turns) else None
        return found is not None and (found.start, found.stop) == (span.start, span.stop)


def _plain(value: Any) -> bool:
    """Whether a value holds only objects, arrays, strings and nulls, at any depth."""
    return all(type(item) is str or item is None for item in leaves(value))


class _Root:
    """The root conversation, whose items have passed the preflight, as the turns copy it."""

    def __init__(self, items: Any) -> None:
        self.items: list[Any] = items if isinstance(items, list) else []
        self._plain: list[bool] | None = None  # per item, found when a turn first copies them

    def span(self, copy: list[Any], start: int) -> range | None:
        """The positions from ``start`` whose items ``copy`` equals (see ``CopyMatches``), if it does."""
        stop = start + len(copy)
        if stop > len(self.items) or copy != self.items[start:stop]:
            return None
        if self._plain is None:
            self._plain = [_plain(item) for item in self.items]
        return range(start, stop) if all(self._plain[start:stop]) else None


def _check_copy(items: Any, start: int, path: str, root: _Root) -> range | None:
    """``_check_conversation`` of a turn's copy, which expects its items at ``start`` of the root
    conversation: the span it equals there (checked already), or None (its items checked)."""
    span = root.span(items, start) if isinstance(items, list) else None
    if span is None:
        _check_conversation(items, path)
    return span


def preflight_trajectory(trajectory: Any) -> CopyMatches:
    """Run 0.7.0's raw preflight over ``ng_trajectory`` in its visiting order (nothing to check
    in a non-object); where the turns' copies are root conversation items."""
    matches = CopyMatches([])
    if not isinstance(trajectory, dict):
        return matches
    root = "ng_trajectory"
    conversation = _Root(None)
    invocations = trajectory.get("invocations")
    for index, invocation in enumerate(invocations if isinstance(invocations, list) else ()):
        if isinstance(invocation, dict):
            path = f"{root}.invocations[{index}]"
            _check_conversation(invocation.get("conversation"), f"{path}.conversation")
            _check_model_call_refs(invocation, path)
            if index == 0:
                conversation = _Root(invocation.get("conversation"))
    turns = trajectory.get("turns")
    for index, turn in enumerate(turns if isinstance(turns, list) else ()):
        spans: dict[str, range] = {}
        matches.turns.append(spans)
        if isinstance(turn, dict):
            path = f"{root}.turns[{index}]"
            for copy, start in zip(_COPIES, _copy_starts(turn), strict=True):
                span = _check_copy(turn.get(copy), start, f"{path}.{copy}", conversation)
                if span is not None:
                    spans[copy] = span
            _check_model_call_refs(turn, path)
    calls = trajectory.get("model_calls")
    for index, call in enumerate(calls if isinstance(calls, list) else ()):
        if isinstance(call, dict):
            _check_model_ref(call.get("response_metadata"), f"{root}.model_calls[{index}].response_metadata")
    return matches


def _copy_starts(turn: dict[str, Any]) -> tuple[int, int, int]:
    """Where each copy (in ``_COPIES`` order) would start in the root conversation: the question
    at its start, the reasoning after the question, the answer after the reasoning."""
    question, reasoning = turn.get("question"), turn.get("reasoning_content")
    after_question = len(question) if isinstance(question, list) else 0
    after_reasoning = after_question + (len(reasoning) if isinstance(reasoning, list) else 0)
    return 0, after_reasoning, after_question
