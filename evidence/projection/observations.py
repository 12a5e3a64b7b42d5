"""Step 2: fold the (already joined) observation bundle into the trajectory (collection.md §8.3).

Producer invocations win on an id collision; observed tool calls overlay the producer's and pick
up their output from the ``function_call_output`` items of the merged invocations'
conversations.
"""

from __future__ import annotations

from typing import Any

from evidence.gaps import AGENT_OBSERVATIONS_INVALID
from evidence.models.conversation import item_kind
from evidence.models.observations import AgentInvocationRecord, AgentObservationBundle
from evidence.models.trajectory import TrajectoryToolCall
from evidence.projection.draft import Draft, gap

__all__ = ["merge_bundle", "merge_observations"]

_ToolKey = tuple[str, str]


def merge_observations(raw: Any, draft: Draft) -> None:
    """Add the bundle's gaps, invocations and tool calls to ``draft``.

    Any failure (normally an invalid bundle) becomes ``agent_observations_invalid`` with the
    exception class name, as in 0.7.0, and what was already added stays.
    """
    if raw is None:
        return
    try:
        bundle = AgentObservationBundle.model_validate(raw)
    except Exception as exc:  # noqa: BLE001 - 0.7.0 turns any failure into this gap
        draft.gaps.append(gap(AGENT_OBSERVATIONS_INVALID, detail=type(exc).__name__))
        return
    merge_bundle(bundle, draft)


def merge_bundle(bundle: AgentObservationBundle, draft: Draft) -> None:
    """:func:`merge_observations` of a bundle already validated; a failure is the same gap."""
    try:
        _merge(bundle, draft)
    except Exception as exc:  # noqa: BLE001 - 0.7.0 turns any failure into this gap
        draft.gaps.append(gap(AGENT_OBSERVATIONS_INVALID, detail=type(exc).__name__))


def _merge(bundle: AgentObservationBundle, draft: Draft) -> None:
    draft.gaps.extend(bundle.gaps)
    present = {invocation.invocation_id for invocation in draft.invocations}
    for record in bundle.records:
        if record.kind == "agent_invocation" and record.invocation_id not in present:
            draft.invocations.append(record)
            present.add(record.invocation_id)
    observed_tools = [record for record in bundle.records if record.kind == "tool_call"]
    if not observed_tools:
        return
    outputs = _tool_outputs(draft.invocations)
    for observed in observed_tools:
        _overlay_tool(draft.tool_calls, observed.model_dump(mode="json", exclude_none=True), outputs)


def _tool_outputs(invocations: list[AgentInvocationRecord]) -> dict[_ToolKey, Any]:
    """``(invocation_id, call_id) -> output`` from every normalised function_call_output item.

    Only those items are dumped (in JSON mode, the normalised form), not whole conversations:
    an item's dump says ``function_call_output`` exactly when its model is that tag's.
    """
    outputs: dict[_ToolKey, Any] = {}
    for invocation in invocations:
        for item in invocation.conversation:
            if item_kind(item) == "function_call_output":
                dumped = item.model_dump(mode="json")
                outputs[(invocation.invocation_id, dumped["call_id"])] = dumped.get("output")
    return outputs


def _overlay_tool(tools: list[TrajectoryToolCall], observed: dict[str, Any], outputs: dict[_ToolKey, Any]) -> None:
    """Overlay one observed tool call (non-null fields) on the producer's, or append it."""
    key = (observed["invocation_id"], observed["tool_call_id"])
    index = next(
        (position for position, tool in enumerate(tools) if (tool.invocation_id, tool.tool_call_id) == key),
        None,
    )
    merged = tools[index].model_dump(mode="json") if index is not None else {}
    if observed.get("status") == "unknown" and merged.get("status", "unknown") != "unknown":
        del observed["status"]
    merged.update(observed)
    if key in outputs:
        merged["output"] = outputs[key]
    tool = TrajectoryToolCall.model_validate(merged)
    if index is None:
        tools.append(tool)
    else:
        tools[index] = tool
