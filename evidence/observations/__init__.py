"""Agent observations joined to captured model calls (spec: collection.md §5.5, §6, §7)."""

from evidence.observations.bundle import join_observations, joined_bundle
from evidence.observations.claude_code import associate_claude_code_compaction_calls
from evidence.observations.join import join_model_call_observations

__all__ = ["associate_claude_code_compaction_calls", "join_model_call_observations", "join_observations", "joined_bundle"]
