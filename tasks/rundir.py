"""Run directories: every name in one, claiming a run id, remembering its parameters, resuming, LATEST.

Every file and folder name of a run directory (and of the job directory above it) is named
here, the run directory's from ``evidence/outputs.py`` (the one table of a run's outputs); code
reaches them through ``RunPaths``. A run id is claimed with a
create-if-absent write of ``params.json`` (O_EXCL locally,
If-None-Match on S3), so two runs can never share a directory. ``params.json`` holds the
output-changing parameters; a resume must agree with them.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from evidence import AttemptEntry, FinishedRun, ManifestAttempts, RecordedParams, StageError, outputs
from tasks.storage import InputNotFound, Location
from tasks.storage.writes import TEMP_PREFIX

# The job directory: <output>/<job-id>/
RUNS_FOLDER = "runs"
LATEST_FILE = "LATEST"
# The newest complete full run whose quality gate failed: LATEST never names one, and the sweep
# reads both pointers so it does not redo a gated job whose inputs did not change.
FAILED_GATE_FILE = "LATEST_FAILED_GATE"

# A run directory: <output>/<job-id>/runs/<run-id>/
# (what each holds, and who reads it: evidence/outputs.py, the one table of a run's outputs)
PARAMS_FILE = outputs.PARAMS.name
MANIFEST_FILE = outputs.MANIFEST.name
SUCCESS_FILE = outputs.SUCCESS.name
ACCOUNTING_FILE = outputs.ACCOUNTING.name
GATE_FILE = outputs.GATE.name
REPORT_FILE = outputs.REPORT.name
ROLLOUTS_FILE = outputs.ROLLOUTS.name
FAILURES_FILE = outputs.FAILURES.name
PERF_SUMMARY_FILE = outputs.PERF_SUMMARY.name
CAPABILITIES_FILE = outputs.CAPABILITIES.name
AGGREGATE_METRICS_FILE = outputs.AGGREGATE_METRICS.name  # 0.7.0's <stem>_aggregate_metrics.json
AGGREGATE_METRICS_CLEAN_FILE = outputs.AGGREGATE_METRICS_CLEAN.name
SCORES_FILE = outputs.SCORES.name
QUALITY_SUMMARY_FILE = outputs.QUALITY_SUMMARY.name  # the health drop-in's two files, under 0.7.0's names
VERDICTS_FILE = outputs.VERDICTS.name
ATIF_FOLDER = outputs.ATIF.name.rstrip("/")
ATIF_MANIFEST_FILE = outputs.ATIF_MANIFEST.name
ATIF_REJECTIONS_FILE = outputs.ATIF_REJECTIONS.name
ATIF_ERROR_FILE = outputs.ATIF_ERROR.name
TABLES_FOLDER = outputs.TABLES.name.rstrip("/")
VIEWER_PAGE = outputs.VIEWER_PAGE.name
VIEWER_FOLDER = VIEWER_PAGE.rpartition("/")[0]  # index.html and its detail files (tasks/tables/viewer.py)
ATTEMPTS_FOLDER = outputs.ATTEMPTS.name.rstrip("/")  # removed once the run is published
LEASE_FILE = "LEASE"  # who is working in the run, while it runs (tasks.lease); removed when it ends
LIVE_FILE = "live.json"  # a followed job's status at its last snapshot (flows/execution/follow.py)
COMPARE_JSON, COMPARE_MARKDOWN, COMPARE_PAGE = "compare.json", "compare.md", "compare.html"  # in a comparison folder
COMPARE_FILES = (COMPARE_JSON, COMPARE_MARKDOWN, COMPARE_PAGE)


class RunPaths:
    """The locations of one run directory's outputs, by what they hold."""

    def __init__(self, run_dir: Location) -> None:
        self.run_dir = run_dir

    def _at(self, name: str) -> Location:
        return self.run_dir.child(name)

    @property
    def params(self) -> Location:
        return self._at(PARAMS_FILE)

    @property
    def manifest(self) -> Location:
        return self._at(MANIFEST_FILE)

    @property
    def success(self) -> Location:
        return self._at(SUCCESS_FILE)

    @property
    def accounting(self) -> Location:
        return self._at(ACCOUNTING_FILE)

    @property
    def gate(self) -> Location:
        return self._at(GATE_FILE)

    @property
    def report(self) -> Location:
        return self._at(REPORT_FILE)

    @property
    def rollouts(self) -> Location:
        return self._at(ROLLOUTS_FILE)

    @property
    def failures(self) -> Location:
        return self._at(FAILURES_FILE)

    @property
    def perf_summary(self) -> Location:
        return self._at(PERF_SUMMARY_FILE)

    @property
    def capabilities(self) -> Location:
        return self._at(CAPABILITIES_FILE)

    @property
    def aggregate_metrics(self) -> Location:
        return self._at(AGGREGATE_METRICS_FILE)

    @property
    def aggregate_metrics_clean(self) -> Location:
        return self._at(AGGREGATE_METRICS_CLEAN_FILE)

    @property
    def scores(self) -> Location:
        return self._at(SCORES_FILE)

    @property
    def quality_summary(self) -> Location:
        return self._at(QUALITY_SUMMARY_FILE)

    @property
    def verdicts(self) -> Location:
        return self._at(VERDICTS_FILE)

    @property
    def atif(self) -> Location:
        return self._at(ATIF_FOLDER)

    @property
    def atif_manifest(self) -> Location:
        return self._at(ATIF_MANIFEST_FILE)

    @property
    def atif_rejections(self) -> Location:
        return self._at(ATIF_REJECTIONS_FILE)

    @property
    def atif_error(self) -> Location:
        return self._at(ATIF_ERROR_FILE)

    @property
    def tables(self) -> Location:
        return self._at(TABLES_FOLDER)

    @property
    def attempts(self) -> Location:
        return self._at(ATTEMPTS_FOLDER)

    @property
    def lease(self) -> Location:
        return self._at(LEASE_FILE)

    @property
    def viewer(self) -> Location:
        return self._at(VIEWER_FOLDER)


class RunConflict(StageError):
    """The run cannot start: the run id is taken, a resume disagrees with the run, or the
    outputs would land among the inputs."""


class UnreadableManifest(StageError, ValueError):
    """A run's ``manifest.json`` is not a document this stage writes."""


def finished_run(run_dir: Location) -> FinishedRun:
    """The run's ``manifest.json`` as the typed view every reader of a finished run takes.

    Raises:
        InputNotFound: the run has no manifest.
        UnreadableManifest: the manifest is not one this stage writes.
    """
    return _parsed(run_dir, FinishedRun)


def run_attempts(run_dir: Location) -> list[AttemptEntry]:
    """The manifest's attempt entries, typed, in input order (``tables`` streams them instead: tasks/tables/manifest.py)."""
    return _parsed(run_dir, ManifestAttempts).attempts


_Model = TypeVar("_Model", bound=BaseModel)


def _parsed(run_dir: Location, model: type[_Model]) -> _Model:
    manifest = RunPaths(run_dir).manifest
    try:
        return model.model_validate_json(manifest.read_bytes())
    except ValidationError as exc:
        raise UnreadableManifest(f"{manifest.display} is not a manifest of evidence-stage: {exc.errors()[0]['msg']}") from exc


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
                f"output {job_dir.display} and input location {folder.display} overlap (inputs are read-only):"
                " choose an output outside the job's inputs"
            )


def claim(run_dir: Location, recorded: RecordedParams) -> None:
    """Create the run directory's ``params.json``; a taken run id is an error."""
    if not RunPaths(run_dir).params.write_new(_params_bytes(recorded)):
        raise RunConflict(f"run id already exists: {run_dir.url} (use --resume to continue it)")


def record_shards(run_dir: Location, recorded: RecordedParams) -> None:
    """Rewrite ``params.json`` of a followed job whose glob matched more shards by its end than when it was claimed."""
    RunPaths(run_dir).params.write_bytes(_params_bytes(recorded))


def _params_bytes(recorded: RecordedParams) -> bytes:
    return orjson.dumps(recorded.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def recorded_params(run_dir: Location) -> RecordedParams:
    """The parameters an existing run was started with."""
    location = RunPaths(run_dir).params
    if not location.is_file():
        raise RunConflict(f"no such run to resume: {run_dir.url}")
    return RecordedParams.model_validate_json(location.read_bytes())


def check_resume(run: RecordedParams, requested: dict[str, Any]) -> None:
    """Every parameter the caller set explicitly (``requested``, as ``RecordedParams.model_dump`` gives
    them) must equal the interrupted run's.

    Compared as full values, not as ``params.json`` holds them: the file leaves out an unset gate and
    the default score mask, and a ``--gate`` or ``--score-mask`` given to resume such a run was ignored.
    """
    recorded = run.model_dump()
    conflicts = sorted(k for k, v in requested.items() if k in recorded and recorded[k] != v)
    if conflicts:
        detail = ", ".join(f"{k}: run has {recorded[k]!r}, asked {requested[k]!r}" for k in conflicts)
        raise RunConflict(f"--resume conflicts with the run's parameters ({detail})")


def claimed_at(run_dir: Location) -> datetime:
    """When the run was claimed: ``params.json`` is written then, once, and never again (a resume reads it)."""
    return RunPaths(run_dir).params.modified()


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
    location = RunPaths(run_dir).gate
    return not location.is_file() or bool(orjson.loads(location.read_bytes())["passed"])


def is_complete(run_dir: Location) -> bool:
    return RunPaths(run_dir).success.is_file()


def mark_complete(run_dir: Location) -> None:
    RunPaths(run_dir).success.write_bytes(b"")


def finished_at(run_dir: Location) -> datetime | None:
    """When a complete run finished (its manifest's ``run.finished_at``); None without a readable manifest."""
    manifest = RunPaths(run_dir).manifest
    if not is_complete(run_dir) or not manifest.is_file():
        return None
    try:
        return datetime.fromisoformat(finished_run(run_dir).run.finished_at)
    except UnreadableManifest:
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


def newest_manifest(output: Location, job_id: str) -> FinishedRun | None:
    """The manifest of the job's newest complete full run, whether its gate passed (LATEST) or not.

    The sweep decides freshness from it: a run that failed its gate is still the job processed
    for those inputs and that config, and redoing it would fail the same way.
    """
    found = [m for m in (latest_manifest(output, job_id), latest_manifest(output, job_id, FAILED_GATE_FILE)) if m is not None]
    return max(found, key=_finished, default=None)


def _finished(manifest: FinishedRun) -> tuple[str, str]:
    """The order LATEST keeps (``update_latest``): finish time, then run id."""
    return manifest.run.finished_at, manifest.run.run_id


def latest_manifest(output: Location, job_id: str, pointer: str = LATEST_FILE) -> FinishedRun | None:
    """The manifest of the complete run the job's ``pointer`` file names (LATEST by default), or None."""
    latest = output.child(job_id, pointer)
    if not latest.is_file():
        return None
    run_dir = run_dir_of(output, job_id, latest.read_bytes().decode().strip())
    if not is_complete(run_dir) or not RunPaths(run_dir).manifest.is_file():
        return None
    return finished_run(run_dir)


def remove_snapshot_outputs(run_dir: Location) -> None:
    """Remove what a followed job's snapshots wrote, before its final pass writes the run's outputs.

    A snapshot's outputs are the run's as they stood: a file one of them wrote that the finished
    run does not (an all-or-nothing run's ATIF files, say) must not outlive it. The parameters,
    the parts, the lease and ``live.json`` stay.
    """
    kept = {PARAMS_FILE, ATTEMPTS_FOLDER, LEASE_FILE, LIVE_FILE}
    for entry in run_dir.list_files(folders=True):
        if entry.name not in kept:
            location = run_dir.child(entry.name)
            if entry.folder:
                location.remove_tree()
            else:
                location.remove()
