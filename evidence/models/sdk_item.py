"""What every SDK-derived conversation item model shares (spec: §8.9).

The OpenAI SDK's response-side models keep unknown keys after their known fields, at every
nesting level; ``Status`` is the SDK's item status.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["SdkModel", "Status"]

Status = Literal["in_progress", "completed", "incomplete"]


class SdkModel(BaseModel):
    """Base of the SDK item models: unknown keys are kept."""

    model_config = ConfigDict(extra="allow")
