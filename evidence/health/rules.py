"""The rollout-scope health checks of 0.7.0, one function each.

Each rule receives a ``RowView`` whose generic gates (trajectory, turns, captured calls, binding
view) already passed, and returns its flags in emission order, or ``None`` when a gate specific
to that check says the rollout cannot be judged (the check is then *unobserved*).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from evidence.health.bindings import reference_key
from evidence.health.calls import has_tool_call, nonempty, response_has_content, token_count
from evidence.health.chains import failed_chain_ends
from evidence.health.view import CONTRADICTION_KINDS, RowView


class Flag(NamedTuple):
    """One finding before the runner stamps its check id; a None locator is omitted on output."""

    locator: dict[str, Any] | None
    detail: dict[str, Any]


def missing_agent_turns(view: RowView) -> list[Flag]:
    """No turn shows model activity (a message, reasoning, a tool call or a keyed call ref)."""
    if any(_has_activity(turn) for turn in view.turns):
        return []
    return [Flag(None, {"reason": "no agent turn with model activity"})]


def ended_on_failed_model_call(view: RowView) -> list[Flag]:
    """One flag per model whose chain of captured calls ended on a failed call."""
    return [
        Flag(
            last.locator,
            {
                "model_ref": _model_ref_text(last.model_ref),
                "status": last.status_code,
                "error_category": last.error_category,
                "observed_calls": len(chain),
                "successful_calls": sum(call.successful for call in chain),
            },
        )
        for chain, last in failed_chain_ends(view.calls)
    ]


def hollow_turns(view: RowView) -> list[Flag]:
    """One flag per turn with neither a message, reasoning, nor a tool call (refs do not count)."""
    return [
        Flag({"turn": turn["turn_no"]}, {"reason": "agent turn has no message or tool calls"})
        for turn in view.turns
        if not _has_message_or_tool_call(turn)
    ]


def zero_completion_tokens(view: RowView) -> list[Flag]:
    """Owned matched calls that reported exactly zero completion tokens."""
    return [Flag(c.locator, {"completion_tokens": 0}) for c in view.owned_view.matched if c.tokens_out == 0]


def missing_token_counts(view: RowView) -> list[Flag]:
    """Owned matched calls with a null prompt and/or completion count."""
    flags = []
    for call in view.owned_view.matched:
        missing = [name for name, value in (("prompt_tokens", call.tokens_in), ("completion_tokens", call.tokens_out)) if value is None]
        if missing:
            flags.append(Flag(call.locator, {"missing": missing}))
    return flags


def trajectory_capture_mismatch(view: RowView) -> list[Flag]:
    """Unresolvable or ambiguous references, then contradiction gaps not already reported."""
    owned = view.owned_view
    reference_flags: dict[tuple[str, str], dict[str, Any]] = {
        ("missing_captured_call", _last_segment(key)): {"kind": "missing_captured_call"} for key in owned.missing
    }
    for key, count in owned.duplicated:
        reference_flags.setdefault(
            ("duplicated_captured_call", _last_segment(key)),
            {"kind": "duplicated_captured_call", "count": count},
        )
    flags = [Flag({"call_id": locator}, detail) for (_, locator), detail in reference_flags.items()]
    for gap in view.contradiction_gaps:
        kind = CONTRADICTION_KINDS[gap["code"]]
        locator = _last_segment(gap["detail"] or "unknown")
        if (kind, locator) not in reference_flags:  # gaps are not de-duplicated among themselves
            detail = {"kind": kind, "observation_gap": gap["code"], "invocation_id": gap["invocation_id"]}
            flags.append(Flag({"call_id": locator}, detail))
    return flags


def failed_model_calls(view: RowView) -> list[Flag]:
    """Every failed owned matched call; ``terminal`` marks the last one of a complete binding."""
    owned = view.owned_view
    last_position = owned.matched[-1].position if owned.matched else None
    return [
        Flag(
            call.locator,
            {
                "status": call.status_code,
                "error_category": call.error_category,
                "terminal": owned.complete and call.position == last_position,
            },
        )
        for call in owned.matched
        if call.failed
    ]


def token_count_mismatch(view: RowView) -> list[Flag] | None:
    """Transcript usage differs from the sum over turn-bound calls (invocation-owned excluded)."""
    bound = view.turn_view
    if (
        not view.turn_call_scope_complete
        or not bound.complete
        or not bound.matched
        or not view.usage.present
        or any(call.tokens_in is None or call.tokens_out is None for call in bound.matched)
    ):
        return None
    capture_prompt = sum(token_count(call.tokens_in) for call in bound.matched)
    capture_completion = sum(token_count(call.tokens_out) for call in bound.matched)
    if (view.usage.prompt, view.usage.completion) == (capture_prompt, capture_completion):
        return []
    return [
        Flag(
            None,
            {
                "transcript_prompt": view.usage.prompt,
                "transcript_completion": view.usage.completion,
                "capture_prompt": capture_prompt,
                "capture_completion": capture_completion,
            },
        )
    ]


def runaway_generation(view: RowView) -> list[Flag] | None:
    """Length-stopped owned calls whose saved response kept no content at all."""
    matched = view.owned_view.matched
    if any(call.runaway_finish and call.response is None for call in matched):
        return None  # nothing saved to judge
    return [
        Flag(call.locator, {"finish_reason": call.finish_reason})
        for call in matched
        if call.runaway_finish and not response_has_content(call.response)
    ]


def _has_message_or_tool_call(turn: dict[str, Any]) -> bool:
    answer = turn["answer"]
    return nonempty(answer) or nonempty(turn["reasoning_content"]) or has_tool_call(answer)


def _has_activity(turn: dict[str, Any]) -> bool:
    return _has_message_or_tool_call(turn) or any(reference_key(ref) for ref in turn["model_calls"])


def _model_ref_text(model_ref: dict[str, Any] | None) -> str | None:
    return None if model_ref is None else f"{model_ref.get('type')}/{model_ref.get('name')}"


def _last_segment(text: str) -> str:
    return text.rsplit(":", 1)[-1]
