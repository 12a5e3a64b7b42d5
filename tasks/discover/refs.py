"""What discovery hands on: one reference per input row (its bytes' place, its capture, its key), and the lines that are not rows.

Every later stage (the fan-out, the parts, the reduce, the manifest) knows an attempt by its ``AttemptRef``.
"""

from __future__ import annotations

from dataclasses import dataclass

from tasks.storage import FileEntry

MAIN = "main"


FAILURES = "failures"


@dataclass(frozen=True, slots=True)
class AttemptRef:
    """One input row: where its bytes are, which capture it owns, and what it was when seen."""

    source: str
    line: int
    offset: int
    length: int
    out_line: int
    rollout_id: str | None
    capture: FileEntry | None
    incomplete: bool
    fingerprint: str
    shard: int | None = None  # position of its rollouts file in a sharded job; None in a one-file job

    @property
    def key(self) -> str:
        return f"{self.source}:{self.line}" if self.shard is None else f"{self.shard}:{self.source}:{self.line}"

    @property
    def part_folder(self) -> str:
        """Its folder under ``attempts/``: the source, below the shard's folder in a sharded job."""
        return self.source if self.shard is None else f"shard-{self.shard:04d}/{self.source}"


@dataclass(frozen=True, slots=True)
class SkippedLine:
    """A non-blank input line that is not a JSON object: it cannot become a row."""

    source: str
    line: int
    reason: str
    shard: str | None = None  # the shard's file name in a sharded job
