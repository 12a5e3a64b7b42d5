"""Models around the strict ATIF v1.7 export: who exported, and one exported rollout.

The trajectory documents themselves are plain ordered dicts serialised once (see
``evidence.atif.encode``); these models carry what the stage passes between its tasks.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["AtifRollout", "Exporter"]


class Exporter(BaseModel):
    """The name/version stamped into ``extra.nemo_gym.exporter`` (0.7.0 writes its own)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    version: str


class AtifRollout(BaseModel):
    """One rollout converted to an ATIF file, with its manifest line.

    ``key`` is ``(_ng_task_index, _ng_rollout_index)``; ``content`` is the exact file bytes and
    ``manifest_line`` the compact sorted-key JSON line (no newline) that pins its sha256.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: tuple[int, int]
    file_name: str
    content: bytes
    manifest_line: bytes
