"""Step 6: rebuild turns from the model calls when the agent sent no trajectory (§8.7).

Attribution is the turn-synthesis rule of ``evidence.references.TurnAttribution``, and the
content is read by response shape. The operations are
the plain dict operations 0.7.0 performs, so a malformed body fails the same way (a string chat
``message`` raises ``AttributeError``) and the projection falls back (§8.11).
"""

from __future__ import annotations

from typing import Any

from evidence.models.observations import AgentInvocationRecord, ModelCallRef
from evidence.models.trajectory import TrajectoryModelCall, TrajectoryTurn
from evidence.references import TurnAttribution

__all__ = ["synthesize_turns", "turn_content"]

_CHAT_REASONING_KEYS = ("reasoning_content", "reasoning")


def synthesize_turns(
    calls: list[TrajectoryModelCall],
    invocations: list[AgentInvocationRecord],
    resolved: Any,
    identity: tuple[str, str],
) -> list[TrajectoryTurn]:
    """One turn per referenced call with a response, numbered per invocation in call order."""
    task_id, rollout_id = identity
    attribution = TurnAttribution(invocations)
    turns: list[TrajectoryTurn] = []
    turn_counts: dict[str, int] = {}
    tool_counts: dict[str, int] = {}
    for call in calls:
        if call.response is None:
            continue
        metadata = call.response_metadata
        invocation_id = attribution.invocation_of(call.model_call_id, metadata.response_id)
        if invocation_id is None:
            continue
        question, answer, reasoning, tool_count = turn_content(call.request, call.response)
        turn_counts[invocation_id] = turn_counts.get(invocation_id, 0) + 1
        turns.append(
            TrajectoryTurn(
                invocation_id=invocation_id,
                task_id=task_id,
                rollout_id=rollout_id,
                turn_no=turn_counts[invocation_id],
                timestamp=call.started_at or call.completed_at or 0.0,
                question=question,
                answer=answer,
                reasoning_content=reasoning,
                step_count=tool_counts.get(invocation_id, 0),
                model_calls=[
                    # Validated for its rule (an id, or a model_ref and a response id). The call's
                    # model_ref goes in as the model it is, which validation takes over unchanged:
                    # dumping it to validate the dump would only rebuild the same value.
                    ModelCallRef.model_validate(
                        {"model_call_id": call.model_call_id, "model_ref": metadata.model_ref, "response_id": metadata.response_id}
                    )
                ],
            )
        )
        tool_counts[invocation_id] = tool_counts.get(invocation_id, 0) + tool_count
    if turns and isinstance(resolved, bool):
        turns[-1] = turns[-1].model_copy(update={"resolved": resolved})
    return turns


def turn_content(request: Any, response: Any) -> tuple[Any, Any, Any, int]:
    """``(question, answer, reasoning_content, tool call count)`` of one call."""
    question = _question(request)
    if isinstance(response, dict) and isinstance(response.get("output"), list):
        items = [item for item in response["output"] if isinstance(item, dict)]
        reasoning = [item for item in items if item.get("type") == "reasoning"] or None
        answer = [item for item in items if item.get("type") != "reasoning"]
        return question, answer, reasoning, sum(1 for item in answer if item.get("type") == "function_call")
    choices = response.get("choices") if isinstance(response, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message") or {}
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        message_answer = {key: value for key, value in message.items() if key not in _CHAT_REASONING_KEYS}
        return question, message_answer, reasoning, len(message.get("tool_calls") or [])
    return question, None, None, 0


def _question(request: Any) -> Any:
    """The request's input (role items typed as messages), else its messages; raw text verbatim."""
    if not isinstance(request, dict):
        return request
    if "input" not in request:
        return request.get("messages")
    question = request["input"]
    if isinstance(question, list):
        question = [
            {"type": "message", **item} if isinstance(item, dict) and "role" in item and "type" not in item else item for item in question
        ]
    return question
