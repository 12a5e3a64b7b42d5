"""Who exported a strict ATIF v1.7 file (the exported files are ``evidence.atif.digest.AtifFile``).

The trajectory documents themselves are plain ordered dicts serialised once (see
``evidence.atif.encode``); these models carry what the stage passes between its tasks.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Exporter"]


class Exporter(BaseModel):
    """The name/version stamped into ``extra.nemo_gym.exporter`` (0.7.0 writes its own)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    version: str
