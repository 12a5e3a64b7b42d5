"""The gap codes, as data: every code the library writes or reads, with what it means.

A gap is a known hole in a rollout's evidence, named by a code that 0.7.0 fixes (spec:
collection.md §12; the producer codes it passes through are read by health and the capability
matrix). Every module names a code by its constant here, never by its text, so a misspelt code is
an ImportError rather than a check that silently never fires, and ``GAPS`` is the one catalogue a
reader (or a test) can hold the library to. The constant is the code in capitals.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = [
    "AGENT_OBSERVATIONS_INVALID",
    "AGENT_OBSERVATION_JOIN_FAILED",
    "COMPACTION_MODEL_CALL_JOIN_FAILED",
    "COMPACTION_MODEL_CALL_MATCH_AMBIGUOUS",
    "COMPACTION_MODEL_CALL_REFERENCE_UNAVAILABLE",
    "CONVERSATION_UNAVAILABLE",
    "GAPS",
    "MODEL_CALLS_UNAVAILABLE",
    "MODEL_CALL_CAPTURE_GAP_INVALID",
    "MODEL_CALL_CAPTURE_INCOMPLETE",
    "MODEL_CALL_CAPTURE_NO_RECORDS",
    "MODEL_CALL_CAPTURE_RECORDS_UNREADABLE",
    "MODEL_CALL_CAPTURE_UNREADABLE",
    "MODEL_CALL_OWNERSHIP_UNAVAILABLE",
    "MODEL_CALL_REFERENCE_AMBIGUOUS",
    "MODEL_CALL_REFERENCE_CONFLICT",
    "MODEL_CALL_REFERENCE_UNMATCHED",
    "MULTIMODAL_HISTORY_REDACTED",
    "PRODUCER_TRAJECTORY_IDENTITY_MISMATCH",
    "PRODUCER_TRAJECTORY_INVALID",
    "SANDBOX_RESOURCE_USAGE_UNAVAILABLE",
    "TOOL_OUTPUT_UNAVAILABLE",
    "TOOL_TIMING_UNAVAILABLE",
    "TRAJECTORY_PROJECTION_FAILED",
    "TURNS_UNAVAILABLE",
    "TURN_MODEL_CALL_SCOPE_INCOMPLETE",
]

# ng_model_call_capture (capture merge, §5)
MODEL_CALL_CAPTURE_NO_RECORDS = "model_call_capture_no_records"
MODEL_CALL_CAPTURE_RECORDS_UNREADABLE = "model_call_capture_records_unreadable"
MODEL_CALL_CAPTURE_INCOMPLETE = "model_call_capture_incomplete"
MODEL_CALL_CAPTURE_UNREADABLE = "model_call_capture_unreadable"
AGENT_OBSERVATION_JOIN_FAILED = "agent_observation_join_failed"
TRAJECTORY_PROJECTION_FAILED = "trajectory_projection_failed"
# ng_agent_observations (join, §6; Claude Code association, §7)
MODEL_CALL_REFERENCE_UNMATCHED = "model_call_reference_unmatched"
MODEL_CALL_REFERENCE_AMBIGUOUS = "model_call_reference_ambiguous"
MODEL_CALL_REFERENCE_CONFLICT = "model_call_reference_conflict"
MODEL_CALL_OWNERSHIP_UNAVAILABLE = "model_call_ownership_unavailable"
COMPACTION_MODEL_CALL_JOIN_FAILED = "compaction_model_call_join_failed"
COMPACTION_MODEL_CALL_MATCH_AMBIGUOUS = "compaction_model_call_match_ambiguous"
COMPACTION_MODEL_CALL_REFERENCE_UNAVAILABLE = "compaction_model_call_reference_unavailable"
# ng_trajectory (projection, §8)
PRODUCER_TRAJECTORY_INVALID = "producer_trajectory_invalid"
PRODUCER_TRAJECTORY_IDENTITY_MISMATCH = "producer_trajectory_identity_mismatch"
AGENT_OBSERVATIONS_INVALID = "agent_observations_invalid"
MODEL_CALL_CAPTURE_GAP_INVALID = "model_call_capture_gap_invalid"
MODEL_CALLS_UNAVAILABLE = "model_calls_unavailable"
TURNS_UNAVAILABLE = "turns_unavailable"
CONVERSATION_UNAVAILABLE = "conversation_unavailable"
# producer codes: an agent reports them, collection passes them through, readers act on them
MULTIMODAL_HISTORY_REDACTED = "multimodal_history_redacted"
TURN_MODEL_CALL_SCOPE_INCOMPLETE = "turn_model_call_scope_incomplete"
TOOL_OUTPUT_UNAVAILABLE = "tool_output_unavailable"
TOOL_TIMING_UNAVAILABLE = "tool_timing_unavailable"
SANDBOX_RESOURCE_USAGE_UNAVAILABLE = "sandbox_resource_usage_unavailable"

# code -> what it says about the evidence, one line each, sorted by code
GAPS: Mapping[str, str] = MappingProxyType(
    {
        AGENT_OBSERVATION_JOIN_FAILED: "joining the agent's observations to the captured calls raised",
        AGENT_OBSERVATIONS_INVALID: "the agent's observation bundle did not validate; the projection ignored it",
        COMPACTION_MODEL_CALL_JOIN_FAILED: "linking Claude Code compactions to their summary calls raised",
        COMPACTION_MODEL_CALL_MATCH_AMBIGUOUS: "a compaction's summary could have come from more than one call",
        COMPACTION_MODEL_CALL_REFERENCE_UNAVAILABLE: "a compaction's summary call is not known (producer)",
        CONVERSATION_UNAVAILABLE: "no invocation carries a conversation",
        MODEL_CALL_CAPTURE_GAP_INVALID: "a capture gap object did not validate and stands in its place",
        MODEL_CALL_CAPTURE_INCOMPLETE: "the capture file is marked incomplete: some calls were not written",
        MODEL_CALL_CAPTURE_NO_RECORDS: "no readable capture record for this rollout",
        MODEL_CALL_CAPTURE_RECORDS_UNREADABLE: "some capture lines could not be read; the detail counts them",
        MODEL_CALL_CAPTURE_UNREADABLE: "the capture file could not be read at all",
        MODEL_CALL_OWNERSHIP_UNAVAILABLE: "a captured call no invocation owns",
        MODEL_CALL_REFERENCE_AMBIGUOUS: "a model-call reference matches more than one captured call",
        MODEL_CALL_REFERENCE_CONFLICT: "a model-call reference names a call another invocation owns",
        MODEL_CALL_REFERENCE_UNMATCHED: "a model-call reference matches no captured call",
        MODEL_CALLS_UNAVAILABLE: "the trajectory has no model calls",
        MULTIMODAL_HISTORY_REDACTED: "the agent redacted multimodal history; payloads are not kept (producer)",
        PRODUCER_TRAJECTORY_IDENTITY_MISMATCH: "the producer's trajectory names another task or rollout",
        PRODUCER_TRAJECTORY_INVALID: "the producer's trajectory did not validate; it was rebuilt",
        SANDBOX_RESOURCE_USAGE_UNAVAILABLE: "the sandbox did not report its resource usage (producer)",
        TOOL_OUTPUT_UNAVAILABLE: "a tool execution's output was not recorded (producer)",
        TOOL_TIMING_UNAVAILABLE: "tool executions carry no timing of their own (producer)",
        TRAJECTORY_PROJECTION_FAILED: "building ng_trajectory raised; a minimal record stands in",
        TURN_MODEL_CALL_SCOPE_INCOMPLETE: "turns do not reference every model call of the rollout (producer)",
        TURNS_UNAVAILABLE: "the trajectory has no turns",
    }
)

assert list(GAPS) == sorted(GAPS), "gap codes are listed sorted"
assert set(GAPS) == {v for k, v in dict(globals()).items() if k.isupper() and isinstance(v, str)}, "one entry a code"
