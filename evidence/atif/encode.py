"""Bytes of an exported trajectory file and of its manifest line.

0.7.0 writes ``model_dump_json(indent=2, exclude_none=True)``; serialising our ordered dicts
with the same pydantic-core encoder gives the same bytes (float spelling such as ``1e+16`` and
``0.00001``, raw UTF-8, exact big integers) without re-validating a model per rollout.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pydantic_core

from evidence.models.atif import AtifRollout

__all__ = ["encode_rollout", "encode_trajectory", "manifest_bytes"]


def encode_trajectory(document: dict[str, Any]) -> bytes:
    """The exact file bytes: 2-space indented JSON plus a final newline."""
    return pydantic_core.to_json(document, indent=2) + b"\n"


def encode_rollout(document: dict[str, Any], task_index: int, rollout_index: int) -> AtifRollout:
    """Name the file ``<task>-<rollout>.json`` and pin its sha256 in the manifest line."""
    file_name = f"{task_index}-{rollout_index}.json"
    content = encode_trajectory(document)
    entry = {
        "_ng_rollout_index": rollout_index,
        "_ng_task_index": task_index,
        "expected_sha256": hashlib.sha256(content).hexdigest(),
        "trajectory_path": file_name,
    }
    line = json.dumps(entry, sort_keys=True, separators=(",", ":")).encode()
    return AtifRollout(key=(task_index, rollout_index), file_name=file_name, content=content, manifest_line=line)


def manifest_bytes(rollouts: list[AtifRollout]) -> bytes:
    """``manifest.jsonl``: one line per rollout in the given (input) order, newline-terminated."""
    return b"".join(rollout.manifest_line + b"\n" for rollout in rollouts)
