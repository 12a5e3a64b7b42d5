"""Helpers for flow-level tests: run the stage, hash trees, compare run directories."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import fsspec

from flows.params.stage import StageParams
from flows.stage import stage_flow

# The only outputs allowed to differ between two runs of the same inputs (README, guarantee 3).
VOLATILE = {"manifest.json", "report.html"}
VOLATILE_FOLDERS = ("attempts/", "tables/")  # parts are removed; every table row names its run


def run_stage(**fields: Any) -> dict[str, Any]:
    """Run the stage flow in-process with these parameters."""
    return stage_flow(StageParams(**fields))


def tree_digest(url: str) -> dict[str, str]:
    """sha256 of every file below ``url`` (any fsspec URL), by relative path."""
    fs, root = fsspec.core.url_to_fs(url)
    root = root.rstrip("/")
    return {p[len(root) + 1 :]: hashlib.sha256(fs.cat_file(p)).hexdigest() for p in sorted(fs.find(root))}


def run_outputs(run_dir_url: str) -> dict[str, str]:
    """A run's output digests without the per-attempt parts and the volatile files."""
    return {k: v for k, v in tree_digest(run_dir_url).items() if k not in VOLATILE and not k.startswith(VOLATILE_FOLDERS)}


def local_path(url: str) -> Path:
    return Path(url.removeprefix("file://"))
