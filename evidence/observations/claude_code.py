"""Link Claude Code's context compactions to the model call that wrote their summary (spec: §7).

Claude Code does not say which request produced a compaction summary, so 0.7.0 looks for the
one unreferenced ``/v1/messages`` call whose last user message is the compaction prompt and
whose text output, normalised the way Claude Code renders it, *is* the recorded summary. One
unique match links it; several (or a call two compactions could claim) is reported, never
guessed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from evidence.gaps import COMPACTION_MODEL_CALL_MATCH_AMBIGUOUS, COMPACTION_MODEL_CALL_REFERENCE_UNAVAILABLE
from evidence.models.capture import ModelCallRecord
from evidence.models.observations import (
    AgentInvocationRecord,
    AgentObservationBundle,
    ContextCompactionRecord,
    ModelCallRef,
    ObservationGap,
)
from evidence.observations.join import canonical_ref
from evidence.references import CallName, names_call, record_name, ref_name

__all__ = ["associate_claude_code_compaction_calls"]

_PROMPT_MARKERS = (
    "Your task is to create a detailed summary of this conversation.",
    "Your task is to create a detailed summary of the conversation so far",
    "Your task is to create a detailed summary of the RECENT portion of the conversation",
)
_SUMMARY_PREFIX = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n"
)
_PATH = "<path>"
# The trailers Claude Code may append after the summary (spec §7): each at most once, in this
# order; ``<path>`` stands for one or more characters other than a newline.
_SUMMARY_SUFFIXES = (
    (
        "\n\nIf you need specific details from before compaction (like exact code snippets, error messages,"
        " or content you generated), read the full transcript at: " + _PATH
    ),
    "\n\nRecent messages are preserved verbatim.",
    (
        "\n\nYour REPL VM state has been cleared as part of this compaction. Variables defined in REPL calls"
        " before this point are no longer accessible — redefine any you still need."
    ),
    (
        "\n\nContinue the conversation from where it left off without asking the user any further questions."
        " Resume directly — do not acknowledge the summary, do not recap what was happening, do not"
        ' preface with "I\'ll continue" or similar. Pick up the last task as if the break never happened.'
    ),
)


def _suffix_pattern(suffix: str) -> str:
    """An optional regex group matching ``suffix`` literally, its ``<path>`` as a one-line path."""
    literal = re.escape(suffix).replace(re.escape(_PATH), r"[^\n]+")
    return f"(?:{literal})?"


_SUFFIX_TAIL = re.compile("".join(_suffix_pattern(suffix) for suffix in _SUMMARY_SUFFIXES))
_ANALYSIS = re.compile(r"<analysis>.*?</analysis>", re.DOTALL)
_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.DOTALL)
_BLANK_RUNS = re.compile(r"\n{2,}")


def _message_text(content: Any) -> str:
    """A message's text: the string, the joined text blocks, else a stable JSON dump."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str) for block in content
    ):
        return "".join(block["text"] for block in content)
    return json.dumps(content, sort_keys=True)


def _is_compaction_request(request: dict[str, Any] | None) -> bool:
    messages = (request or {}).get("messages")
    if not isinstance(messages, list) or not messages:
        return False
    last = messages[-1]
    if not isinstance(last, dict) or last.get("role") != "user":
        return False
    text = _message_text(last.get("content"))
    return any(marker in text for marker in _PROMPT_MARKERS)


def _output_text(response: dict[str, Any] | None) -> str:
    content = (response or {}).get("content")
    if not isinstance(content, list):
        return ""
    return "".join(
        block["text"] for block in content if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    )


def _normalised_summary(text: str) -> str:
    """Claude Code's rendering: analysis dropped, ``<summary>`` turned into ``Summary:``."""
    text = _ANALYSIS.sub("", text, count=1)
    text = _SUMMARY.sub(lambda match: "Summary:\n" + match.group(1).strip(), text, count=1)
    return _BLANK_RUNS.sub("\n\n", text).strip()


def _summary_matches(summary: str, output: str) -> bool:
    if not output:
        return False
    expected = _SUMMARY_PREFIX + _normalised_summary(output)
    return summary.startswith(expected) and _SUFFIX_TAIL.fullmatch(summary[len(expected) :]) is not None


def _bound(calls: Sequence[tuple[ModelCallRecord, CallName]], ref: ModelCallRef | None) -> int | bool | None:
    """call_index of a before/after ref; None when unset, False when it names no single call."""
    if ref is None:
        return None
    wanted = ref_name(ref)
    matches = [call.call_index for call, name in calls if names_call(wanted, name)]
    return matches[0] if len(matches) == 1 else False


class _Associator:
    def __init__(self, bundle: AgentObservationBundle, calls: Sequence[ModelCallRecord]) -> None:
        refs = [ref_name(ref) for invocation in bundle.invocations() for ref in invocation.model_calls]
        self.calls = [(call, record_name(call)) for call in calls]
        self.free = [call for call, name in self.calls if not any(names_call(ref, name) for ref in refs)]

    def _eligible_call(self, call: ModelCallRecord, model_refs: list[Any]) -> bool:
        return (
            call.dialect == "messages"
            and call.status_code is not None
            and 200 <= call.status_code <= 299
            and call.error_category is None
            and (call.model_call_id is not None or (call.model_ref is not None and call.response_id is not None))
            and (not model_refs or call.model_ref in model_refs)
            and _is_compaction_request(call.request)
        )

    def candidates(self, compaction: ContextCompactionRecord) -> list[ModelCallRecord]:
        if compaction.outcome != "completed" or compaction.model_calls or compaction.summary is None:
            return []
        before = _bound(self.calls, compaction.before_model_call)
        after = _bound(self.calls, compaction.after_model_call)
        if before is False or after is False:
            return []
        bounds = [ref for ref in (compaction.before_model_call, compaction.after_model_call) if ref is not None]
        model_refs = [ref.model_ref for ref in bounds if ref.model_ref is not None]
        return [
            call
            for call in self.free
            if self._eligible_call(call, model_refs)
            and (before is None or call.call_index > before)
            and (after is None or call.call_index < after)
            and _summary_matches(compaction.summary, _output_text(call.response))
        ]


def _insert_ref(refs: list[ModelCallRef], ref: ModelCallRef, compaction: ContextCompactionRecord) -> list[ModelCallRef]:
    """Place the summary call between the compaction's before and after calls."""
    if compaction.after_model_call is not None and compaction.after_model_call in refs:
        position = refs.index(compaction.after_model_call)
    elif compaction.before_model_call is not None and compaction.before_model_call in refs:
        position = len(refs) - refs[::-1].index(compaction.before_model_call)
    else:
        position = len(refs)
    return [*refs[:position], ref, *refs[position:]]


def associate_claude_code_compaction_calls(bundle: AgentObservationBundle, calls: Sequence[ModelCallRecord]) -> AgentObservationBundle:
    """Return the bundle with compactions linked to their summary calls (input unchanged)."""
    associator = _Associator(bundle, calls)
    compactions = bundle.compactions()
    found = {id(compaction): associator.candidates(compaction) for compaction in compactions}
    claims: dict[int, int] = {}
    for candidates in found.values():
        for call in candidates:
            claims[call.call_index] = claims.get(call.call_index, 0) + 1
    invocation_ids = {invocation.invocation_id for invocation in bundle.invocations()}
    gaps = list(bundle.gaps)
    records = list(bundle.records)
    for compaction in compactions:
        candidates = found[id(compaction)]
        if not candidates:
            continue
        if len(candidates) > 1 or claims[candidates[0].call_index] > 1:
            gaps.append(
                ObservationGap(
                    code=COMPACTION_MODEL_CALL_MATCH_AMBIGUOUS,
                    invocation_id=compaction.invocation_id,
                    detail=f"candidate_count={len(candidates)}",
                )
            )
            continue
        if compaction.invocation_id not in invocation_ids:
            continue
        # Validated, as 0.7.0 builds it: a candidate with an empty id makes no valid ref, and the
        # whole association fails (the caller records compaction_model_call_join_failed).
        ref = ModelCallRef.model_validate(canonical_ref(candidates[0]).model_dump())
        for position, record in enumerate(records):
            if record is compaction:
                records[position] = compaction.model_copy(update={"model_calls": [ref]})
            elif isinstance(record, AgentInvocationRecord) and record.invocation_id == compaction.invocation_id:
                records[position] = record.model_copy(update={"model_calls": _insert_ref(record.model_calls, ref, compaction)})
    unlinked = {record.invocation_id for record in records if isinstance(record, ContextCompactionRecord) and not record.model_calls}
    gaps = [gap for gap in gaps if gap.code != COMPACTION_MODEL_CALL_REFERENCE_UNAVAILABLE or gap.invocation_id in unlinked]
    return bundle.model_copy(update={"records": records, "gaps": gaps})
