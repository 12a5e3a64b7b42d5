"""Run directories: claiming a run id, remembering its parameters, resuming, LATEST.

A run id is claimed with a create-if-absent write of ``params.json`` (O_EXCL locally,
If-None-Match on S3), so two runs can never share a directory. ``params.json`` holds the
output-changing parameters; a resume must agree with them.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import orjson

from tasks.storage import InputNotFound, Location
from tasks.storage.writes import TEMP_PREFIX

PARAMS_FILE = "params.json"
MANIFEST_FILE = "manifest.json"
RUNS_FOLDER = "runs"
SUCCESS_FILE = "_SUCCESS"
LATEST_FILE = "LATEST"
# The newest complete full run whose quality gate failed: LATEST never names one, and the sweep
# reads both pointers so it does not redo a gated job whose inputs did not change.
FAILED_GATE_FILE = "LATEST_FAILED_GATE"
ACCOUNTING_FILE = "accounting.json"
GATE_FILE = "gate.json"


class RunConflict(Exception):
    """The run cannot start: the run id is taken, a resume disagrees with the run, or the
    outputs would land among the inputs."""


def read_document(location: Location) -> Any:
    """A run's JSON output parsed, or None when it does not exist (one request: no HEAD first)."""
    try:
        return orjson.loads(location.read_bytes())
    except InputNotFound:
        return None


def run_dir_of(output: Location, job_id: str, run_id: str) -> Location:
    return output.child(job_id, RUNS_FOLDER, run_id)


def check_apart(job_dir: Location, inputs: Iterable[Location]) -> None:
    """Refuse a job directory that is inside an input location or holds one (README, guarantee 1)."""
    for folder in inputs:
        if job_dir.within(folder) or folder.within(job_dir):
            raise RunConflict(
                f"output {job_dir.display} and input location {folder.display} overlap (inputs are read-only): choose an output outside the job's inputs"
            )


def claim(run_dir: Location, recorded: dict[str, Any]) -> None:
    """Create the run directory's ``params.json``; a taken run id is an error."""
    if not run_dir.child(PARAMS_FILE).write_new(orjson.dumps(recorded, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"):
        raise RunConflict(f"run id already exists: {run_dir.url} (use --resume to continue it)")


def recorded_params(run_dir: Location) -> dict[str, Any]:
    """The parameters an existing run was started with."""
    location = run_dir.child(PARAMS_FILE)
    if not location.is_file():
        raise RunConflict(f"no such run to resume: {run_dir.url}")
    return orjson.loads(location.read_bytes())


def check_resume(recorded: dict[str, Any], requested: dict[str, Any]) -> None:
    """Every parameter the caller set explicitly must equal the interrupted run's."""
    conflicts = sorted(k for k, v in requested.items() if k in recorded and recorded[k] != v)
    if conflicts:
        detail = ", ".join(f"{k}: run has {recorded[k]!r}, asked {requested[k]!r}" for k in conflicts)
        raise RunConflict(f"--resume conflicts with the run's parameters ({detail})")


def discard_temporaries(run_dir: Location) -> list[str]:
    """Delete the temp files a killed run left behind (local disk only; returns their paths).

    An interrupted atomic write leaves ``.tmp-*`` beside its target; object stores never show
    an unfinished upload. Without this a resumed run would differ from an uninterrupted one.
    """
    if not run_dir.is_local or not run_dir.exists():
        return []
    stale = [rel for rel in run_dir.list_tree() if rel.rsplit("/", 1)[-1].startswith(TEMP_PREFIX)]
    for rel in stale:
        run_dir.child(rel).remove()
    return stale


def gate_passed(run_dir: Location) -> bool:
    """Whether a run may stand as LATEST: it had no gate, or its ``gate.json`` says it passed."""
    location = run_dir.child(GATE_FILE)
    return not location.is_file() or bool(orjson.loads(location.read_bytes())["passed"])


def is_complete(run_dir: Location) -> bool:
    return run_dir.child(SUCCESS_FILE).is_file()


def mark_complete(run_dir: Location) -> None:
    run_dir.child(SUCCESS_FILE).write_bytes(b"")


def finished_at(run_dir: Location) -> datetime | None:
    """When a complete run finished (its manifest's ``run.finished_at``); None without a readable manifest."""
    manifest = run_dir.child(MANIFEST_FILE)
    if not is_complete(run_dir) or not manifest.is_file():
        return None
    try:
        return datetime.fromisoformat(orjson.loads(manifest.read_bytes())["run"]["finished_at"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def update_latest(job_dir: Location, run_id: str, finished: datetime, passed: bool = True) -> None:
    """Point LATEST at ``run_id`` (finished at ``finished``) unless it names a run that finished later;
    LATEST_FAILED_GATE instead when the run's quality gate failed (``passed`` False).

    Run ids are free text (``--run-id``), so their order says nothing about age: the newest run
    is the one that finished last, ties going to the greater run id so that every order of
    publishing gives the same LATEST. A LATEST naming a run without a manifest is replaced.
    """
    latest = job_dir.child(LATEST_FILE if passed else FAILED_GATE_FILE)
    if latest.is_file():
        current = latest.read_bytes().decode().strip()
        current_finished = finished_at(job_dir.child(RUNS_FOLDER, current))
        if current != run_id and current_finished is not None and (current_finished, current) > (finished, run_id):
            return
    latest.write_bytes(f"{run_id}\n".encode())
