"""How a job folder is recognised: the capture directory that marks it and its rollouts file globs.

Apart from ``tasks.batch.jobs`` (which finds jobs) so the CLI can name the defaults in ``--help``
without importing the storage layer and the evidence library behind job finding.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

DEFAULT_ROLLOUTS_GLOB = "*.jsonl"
DEFAULT_EXCLUDE_GLOBS = ("*_failures.jsonl", "*_materialized_inputs.jsonl", "*_attempts.jsonl", "rollout_verdicts.jsonl")
DEFAULT_CAPTURE_DIR = "model-calls"
DEFAULT_SHARD_GLOB = "*-chunk*.jsonl"  # Gym's chunked runs: rollouts-rs<seed>-chunk<k>.jsonl


@dataclass(frozen=True)
class JobLayout:
    """How a job folder is recognised: its capture directory name and rollouts file globs.

    A folder whose rollouts files all match ``shard_glob`` is one sharded job.
    """

    rollouts_glob: str = DEFAULT_ROLLOUTS_GLOB
    exclude_globs: tuple[str, ...] = DEFAULT_EXCLUDE_GLOBS
    capture_dir: str = DEFAULT_CAPTURE_DIR
    shard_glob: str = DEFAULT_SHARD_GLOB

    def is_rollouts_file(self, name: str) -> bool:
        return fnmatch.fnmatchcase(name, self.rollouts_glob) and not any(fnmatch.fnmatchcase(name, g) for g in self.exclude_globs)
