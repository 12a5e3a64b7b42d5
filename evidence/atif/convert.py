"""One enriched rollout row -> one ATIF v1.7 trajectory, refusing anything lossy (0.7.0 §5).

Checks run in 0.7.0's order because the first failure is the reported text. Everything is
computed from the row decoded once; no input is mutated.
"""

from __future__ import annotations

from typing import Any, TypedDict

from evidence.atif.conversation import walk_conversation
from evidence.atif.preflight import preflight_trajectory, unsupported_fields_message
from evidence.atif.record import parse_record
from evidence.atif.strict_json import check_json_value, loads_strict
from evidence.atif.turns import agent_steps, surplus_calls
from evidence.errors import AtifExportError
from evidence.models.atif import Exporter
from evidence.references import ExportCallIndex

__all__ = ["AtifIdentity", "agent_label", "agent_name", "decode_row", "is_row_index", "rollout_to_atif", "row_key"]

_AGENT_REF_KEYS = frozenset({"type", "name"})
_TOTALS = (
    ("prompt_tokens", "total_prompt_tokens"),
    ("completion_tokens", "total_completion_tokens"),
    ("cached_tokens", "total_cached_tokens"),
)
NO_AGENT_LABEL = "agent_ref: expected a non-empty agent_ref.name or environment server stamp"


def is_row_index(value: Any) -> bool:
    """A Gym row index: a non-negative int that is not a bool."""
    return type(value) is int and value >= 0


def row_key(row: dict[str, Any]) -> tuple[int, int] | str:
    """The row's ``(task, rollout)`` key, or the first index field that is not a row index (the
    batch checks the indices before anything else of a decoded row)."""
    for field in ("_ng_task_index", "_ng_rollout_index"):
        if not is_row_index(row.get(field)):
            return field
    return row["_ng_task_index"], row["_ng_rollout_index"]


def agent_label(row: dict[str, Any]) -> Any:
    """``agent_ref.name``, else the environment server stamp; unvalidated (the batch collects it).

    A truthy ``agent_ref`` that is not an object has no label (0.7.0 crashes there instead).
    """
    ref = row.get("agent_ref") or {}
    if not isinstance(ref, dict):
        return None
    name = ref.get("name")
    return name if name is not None else row.get("_ng_environment_server")


def agent_name(row: dict[str, Any]) -> str | None:
    """The row's agent label where it is a string: the batch export needs exactly one across a file."""
    label = agent_label(row)
    return label if isinstance(label, str) else None


def _check_identity(value: Any, field: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise AtifExportError(f"{field}: expected a non-empty string")


def _check_root(trajectory: dict[str, Any]) -> dict[str, Any]:
    if trajectory.get("gaps"):
        raise AtifExportError("ng_trajectory.gaps: source coverage gaps are not supported by strict export")
    if not trajectory["task_id"].strip() or not trajectory["rollout_id"].strip():
        raise AtifExportError("ng_trajectory: task_id and rollout_id cannot be blank")
    invocations = trajectory.get("invocations", [])
    if len(invocations) != 1:
        raise AtifExportError("ng_trajectory.invocations: expected exactly one root invocation")
    root: dict[str, Any] = invocations[0]
    path = "ng_trajectory.invocations[0]"
    if not root["invocation_id"].strip():
        raise AtifExportError(f"{path}.invocation_id: cannot be blank")
    if root.get("parent_invocation_id") is not None or root.get("spawned_by_tool_call_id") is not None:
        raise AtifExportError(f"{path}: subagent invocations are not supported")
    status = root.get("status", "unknown")
    if status != "completed":
        raise AtifExportError(f"{path}.status: expected completed, got {status!r}")
    if root.get("error_type") is not None:
        raise AtifExportError(f"{path}.error_type: completed invocation contains an error")
    return root


def _check_agent(row: dict[str, Any]) -> str:
    ref = row.get("agent_ref")
    if isinstance(ref, dict):
        extra = ref.keys() - _AGENT_REF_KEYS
        if extra:
            raise AtifExportError(unsupported_fields_message("agent_ref", extra))
        if ref.get("type") not in (None, "responses_api_agents"):
            raise AtifExportError("agent_ref.type: expected responses_api_agents when present")
    label = agent_label(row)
    if not isinstance(label, str) or not label.strip():
        raise AtifExportError(NO_AGENT_LABEL)
    return label


def _final_metrics(agent: list[dict[str, Any]], step_total: int) -> dict[str, Any]:
    """Sum a token total only when every agent step reports it; never treat absence as 0."""
    final: dict[str, Any] = {}
    metrics = [step["metrics"] for step in agent if step.get("metrics") is not None]
    if len(metrics) == len(agent):
        for name, total in _TOTALS:
            if all(name in m for m in metrics):
                final[total] = sum(m[name] for m in metrics)
    final["total_steps"] = step_total
    return final


def _agent(label: str, agent_version: str, agent: list[dict[str, Any]]) -> dict[str, Any]:
    block: dict[str, Any] = {"name": label, "version": agent_version}
    models = {step.get("model_name") for step in agent}
    if len(models) == 1 and None not in models:
        block["model_name"] = models.pop()
    return block


def _source(trajectory: dict[str, Any], root: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    source: dict[str, Any] = {
        "format": "ng_trajectory",
        "schema_version": "1.0",
        "task_id": trajectory["task_id"],
        "rollout_id": trajectory["rollout_id"],
        "task_index": row["_ng_task_index"],
        "rollout_index": row["_ng_rollout_index"],
        "invocation_id": root["invocation_id"],
        "invocation_status": "completed",
    }
    if root.get("duration_ms") is not None:
        source["invocation_duration_ms"] = float(root["duration_ms"])
    return source


class AtifIdentity(TypedDict):
    """The export-wide keywords of :func:`rollout_to_atif`: every document of one export carries them."""

    session_id: str
    agent_version: str
    exporter: Exporter


def rollout_to_atif(
    row: dict[str, Any], *, session_id: str, agent_version: str, exporter: Exporter, hygiene: bool = True
) -> dict[str, Any]:
    """The ATIF document (ordered dict, model fields without nulls) or ``AtifExportError``.

    ``hygiene=False`` skips the unpaired-surrogate walk when the caller knows the row's JSON
    text cannot produce one (see ``may_hold_surrogate``); rows are large and it is a full walk.
    """
    _check_identity(session_id, "session_id")
    _check_identity(agent_version, "agent_version")
    if hygiene:
        check_json_value(row, "rollout")
    trajectory = row.get("ng_trajectory")
    matches = preflight_trajectory(trajectory)
    conversation = parse_record(trajectory)
    assert isinstance(trajectory, dict), "parse_record refuses anything but a valid trajectory object"
    root = _check_root(trajectory)
    label = _check_agent(row)
    if isinstance(bad_index := row_key(row), str):
        raise AtifExportError(f"{bad_index}: expected a non-negative integer")
    walk = walk_conversation(conversation, trajectory.get("tool_calls", []), root["invocation_id"])
    index = ExportCallIndex(trajectory.get("model_calls", []))
    agent, selected = agent_steps(walk.groups, trajectory.get("turns", []), index, root["invocation_id"], conversation, matches)
    surplus = surplus_calls(root, index, selected)
    steps = [{"step_id": n, **step} for n, step in enumerate(walk.source_steps + agent, start=1)]
    nemo_gym: dict[str, Any] = {
        "exporter": {"name": exporter.name, "version": exporter.version},
        "source": _source(trajectory, root, row),
        "conversion": {"profile": "ng-trajectory-to-atif-v1", "status": "complete"},
    }
    if surplus:
        nemo_gym["surplus_model_calls"] = surplus
    return {
        "schema_version": "ATIF-v1.7",
        "session_id": session_id,
        "trajectory_id": f"{session_id}:{row['_ng_task_index']}:{row['_ng_rollout_index']}",
        "agent": _agent(label, agent_version, agent),
        "steps": steps,
        "final_metrics": _final_metrics(agent, len(steps)),
        "extra": {"nemo_gym": nemo_gym},
    }


def decode_row(line: bytes) -> dict[str, Any]:
    """A JSONL line as a row: strict UTF-8 JSON (no BOM) holding an object."""
    try:
        row = loads_strict(line.decode("utf-8"))
    except (ValueError, RecursionError):
        raise AtifExportError("invalid JSON") from None
    if not isinstance(row, dict):
        raise AtifExportError("expected a JSON object")
    return row
