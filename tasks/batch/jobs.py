"""Finding evaluation jobs under a prefix, and what the output already holds for each.

A job folder, as ``gym eval run`` leaves it, holds a capture directory (``model-calls/``) and
exactly one rollouts file, or several shards of one job (``gym eval run +disable_aggregation``
per chunk, names matching the layout's shard glob). Gym writes other JSONL files beside them
(the failures sidecar, materialised inputs, attempt logs, health verdicts) that are never
rollouts files. A folder with several candidates that are not all shards is reported and
skipped rather than guessed: processing the wrong file would publish a plausible but wrong run.
One recursive listing serves the whole prefix.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

from evidence import CAPTURE_SUFFIX, MARKER_SUFFIX
from tasks.discover.inputs import fingerprint_inputs, list_inputs
from tasks.inputs.layout import JobLayout
from tasks.inputs.naming import job_id_for
from tasks.inputs.shards import find_shards
from tasks.rundir import MANIFEST_FILE, PARAMS_FILE, RUNS_FOLDER, SUCCESS_FILE
from tasks.storage import Location


@dataclass(frozen=True)
class FoundJob:
    """One job: its rollouts file (or shard files, in order) and capture directory URLs, and its id (as ``run`` derives it)."""

    folder: str
    rollouts: str | list[str]
    capture_dir: str
    job_id: str


@dataclass(frozen=True)
class SkippedFolder:
    """A folder with a capture directory that is not a usable job, and why."""

    folder: str
    reason: str
    candidates: tuple[str, ...] = ()


@dataclass
class JobSearch:
    """The jobs found under a prefix, and the folders reported instead of processed."""

    jobs: list[FoundJob] = field(default_factory=list)
    skipped: list[SkippedFolder] = field(default_factory=list)


def find_jobs(prefix: Location, layout: JobLayout) -> JobSearch:
    """Every job folder below ``prefix`` (the prefix itself included), sorted by folder."""
    files_by_folder: dict[str, list[str]] = {}
    job_folders: set[str] = set()
    for rel in prefix.list_tree():
        folder, _, name = rel.rpartition("/")
        files_by_folder.setdefault(folder, []).append(name)
        parent, _, last = folder.rpartition("/")
        if last == layout.capture_dir:
            job_folders.add(parent)
    search = JobSearch()
    for folder in sorted(_without_captures(files_by_folder, job_folders, layout)):
        if any(layout.is_rollouts_file(n) and not n.endswith((CAPTURE_SUFFIX, MARKER_SUFFIX)) for n in files_by_folder[folder]):
            search.skipped.append(SkippedFolder(folder, f"rollouts file(s) but no {layout.capture_dir}/ capture directory"))
    for folder in sorted(job_folders):
        candidates = tuple(sorted(n for n in files_by_folder.get(folder, []) if layout.is_rollouts_file(n)))
        where = prefix.child(folder) if folder else prefix
        if len(candidates) == 1:
            rollouts = where.child(candidates[0]).url
            search.jobs.append(FoundJob(folder, rollouts, where.child(layout.capture_dir).url, job_id_for(rollouts)))
        elif candidates and all(fnmatch.fnmatchcase(n, layout.shard_glob) for n in candidates):
            shards = [where.child(n).url for n in candidates]
            search.jobs.append(FoundJob(folder, shards, where.child(layout.capture_dir).url, job_id_for(shards)))
        elif candidates:
            search.skipped.append(SkippedFolder(folder, f"ambiguous: {len(candidates)} rollouts files", candidates))
        else:
            search.skipped.append(SkippedFolder(folder, "no rollouts file"))
    search.skipped.sort(key=_folder_of)
    return search


def _folder_of(skipped: SkippedFolder) -> str:
    return skipped.folder


_RUN_DIRECTORY_FILES = frozenset({PARAMS_FILE, SUCCESS_FILE, MANIFEST_FILE})


def _without_captures(files_by_folder: dict[str, list[str]], job_folders: set[str], layout: JobLayout) -> list[str]:
    """The folders that are neither a job, nor in a job's capture directory, nor in a run directory
    (an output under the prefix): where a rollouts file without captures is worth a word."""
    runs = {
        folder
        for folder, names in files_by_folder.items()
        if _RUN_DIRECTORY_FILES & set(names) or folder.rpartition("/")[0].rpartition("/")[2] == RUNS_FOLDER
    }

    def apart(folder: str) -> bool:
        parts = folder.split("/")
        ancestors = {"/".join(parts[:k]) for k in range(1, len(parts) + 1)}
        return folder not in job_folders and layout.capture_dir not in parts and not ancestors & runs

    return [folder for folder in files_by_folder if apart(folder)]


def input_fingerprint(job: FoundJob, options: dict[str, Any]) -> str:
    """The job fingerprint the stage would record, from listings only (no rows are read)."""
    urls = [job.rollouts] if isinstance(job.rollouts, str) else job.rollouts
    return fingerprint_inputs(list_inputs(find_shards(urls, options), Location(job.capture_dir, options)))
