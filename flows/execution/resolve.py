"""A run before it starts: its locations, id and recorded parameters; the CLI's preflight.

Kept out of ``flows/stage.py`` so that file holds the flow alone: ``prefect deploy`` loads it
as a top-level module (``stage``), and anything defined there pickles by that name, which no
Dask worker can import.
"""

from __future__ import annotations

import fnmatch
import socket
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from datetime import UTC, datetime
from importlib.metadata import version
from types import TracebackType
from typing import Any, TypeVar

from evidence import RecordedParams, RunIdentity
from flows.execution.credentials import storage_options_with
from flows.params.stage import StageParams, TaskRunnerKind
from tasks.attempts.context import RunContext
from tasks.discover.inputs import check_inputs, check_rows
from tasks.discover.refs import AttemptRef
from tasks.inputs.naming import job_id_for, new_run_id
from tasks.inputs.shards import Shard, expand_rollouts, find_shards
from tasks.lease import check_free, held
from tasks.rundir import (
    PARAMS_FILE,
    RunConflict,
    check_apart,
    check_resume,
    claim,
    claimed_at,
    discard_temporaries,
    finished_at,
    gate_passed,
    recorded_params,
    run_dir_of,
    update_latest,
)
from tasks.storage import Location
from tasks.storage.probe import check_writable

DASK_CONNECT_TIMEOUT_S = 5.0
"""How long the CLI waits for an existing Dask scheduler to accept a connection (Dask's own wait was 30 s and a traceback)."""

ClaimListener = Callable[[str, Location], None]
_claim_listeners: list[ClaimListener] = []
Note = Callable[[str], None]
_notes: list[Note] = []
L = TypeVar("L")


class RunnerRefused(ValueError):
    """The task runner's settings cannot work: an unreachable scheduler, or workers that could not reach the flow's server."""


class NothingToRun(ValueError):
    """A subset that selects no attempt, or a followed job that ended with no row: the run is refused, and a new run's directory removed."""


REFUSAL = "evidence_stage_refusal"
"""Marks the log record of a refused run: the CLI prints the reason as its own error line instead."""


class Refused(Exception):
    """A run that did not start, and why (``cause``): the flow says it in one line, without a traceback."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(reason_of(cause))
        self.cause = cause


def reason_of(exc: BaseException) -> str:
    """An exception as one line: its message's first line, or its type when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def claims_told_to(listener: ClaimListener) -> AbstractContextManager[None]:
    """Call ``listener(run_id, run_dir)`` when a run of this process is claimed (or taken up to resume)."""
    return _listening(_claim_listeners, listener)


def notes_told_to(note: Note) -> AbstractContextManager[None]:
    """Call ``note(text)`` with what a run of this process says of itself once (``tell``; the CLI prints it)."""
    return _listening(_notes, note)


def tell(text: str) -> None:
    """Say ``text`` in the flow run's log and to this process's note listeners (the terminal, where Prefect's INFO is quiet)."""
    from prefect import get_run_logger

    get_run_logger().info("%s", text)
    for note in tuple(_notes):
        note(text)


@contextmanager
def _listening(listeners: list[L], listener: L) -> Iterator[None]:
    listeners.append(listener)
    try:
        yield
    finally:
        listeners.remove(listener)


def package_version() -> str:
    return version("evidence-stage")


def subset_filter(rollout_ids: list[str], rollout_glob: str | None) -> Callable[[AttemptRef], bool]:
    """Whether an attempt is chosen by rollout id or glob for a subset rerun."""
    wanted = set(rollout_ids)

    def chosen(attempt: AttemptRef) -> bool:
        rollout_id = attempt.rollout_id
        if rollout_id is None:
            return False
        return rollout_id in wanted or (rollout_glob is not None and fnmatch.fnmatchcase(rollout_id, rollout_glob))

    return chosen


def subset_described(recorded: RecordedParams) -> str:
    """A subset as the user asked for it: ``--rollout-id a, b`` and/or ``--rollout-glob g``."""
    parts = [f"--rollout-id {', '.join(recorded.rollout_ids)}"] if recorded.rollout_ids else []
    parts += [f"--rollout-glob {recorded.rollout_glob}"] if recorded.rollout_glob is not None else []
    return " or ".join(parts)


def recorded_rollouts(shards: tuple[Shard, ...]) -> str | list[str]:
    """What ``params.json`` records: the one rollouts URL, or the expanded shard URLs (a glob can match more later)."""
    urls = [shard.main.url for shard in shards]
    return urls[0] if len(urls) == 1 else urls


def output_params(params: StageParams, job_id: str, rollouts: str | list[str]) -> RecordedParams:
    """What ``params.json`` records; ``rollouts`` as ``recorded_rollouts`` gives it, ``gate`` only when set."""
    return RecordedParams(
        rollouts=rollouts,
        capture_dir=params.capture_dir,
        failures=params.failures,
        job_id=job_id,
        session_id=params.session_id or job_id,
        agent_version=params.agent_version or package_version(),
        ignored_checks=list(params.ignored_checks),
        atif_all_or_nothing=params.atif_all_or_nothing,
        rollout_ids=list(params.rollout_ids),
        rollout_glob=params.rollout_glob,
        gate=params.gate.recorded() if params.gate.active else None,
        score_mask=params.score_mask.value,
    )


def job_locations(params: StageParams) -> tuple[tuple[Shard, ...], Location, Location, str]:
    """The run's inputs (its shards, one for a one-file job; the capture dir), the output root and the job id.

    Checks what can be checked before anything is written: every input exists (a failures
    sidecar given explicitly too), and the job directory is apart from the inputs.
    """
    options = storage_options_with(params)
    capture_dir = Location(params.capture_dir, options)
    urls = expand_rollouts(params.rollouts, options)
    if params.follow and params.job_id is None and any(char in "*?[" for char in str(params.rollouts)):
        raise ValueError("a followed glob needs --job-id: the job id derived from the files it matches would change as shards appear")
    shards = find_shards(urls, options, params.failures)
    if not params.follow:  # a followed job's files may not be written yet (tasks.follow)
        check_inputs(shards, capture_dir)
        check_rows(shards)
    job_id = params.job_id or job_id_for(urls)
    output = Location(params.output, options)
    files = [f for shard in shards for f in (shard.main, shard.failures, shard.materialized) if f is not None]
    check_apart(output.child(job_id), [capture_dir] + [f.parent() for f in files])  # parameter URLs are absolute
    check_writable(output.child(job_id))
    return shards, capture_dir, output, job_id


def check_runner(params: StageParams) -> None:
    """Refuse an existing Dask cluster that cannot work: one whose workers could not reach this
    flow's Prefect server, or whose scheduler does not answer.

    Without ``PREFECT_API_URL`` the flow runs against a temporary server of its own process,
    which the workers of an existing cluster do not know: each would start a temporary server
    of its own, and the flow's task runs would never reach the flow's server. A local cluster
    (``--dask-workers``) is told the flow's server (``flows.execution.runners.shared_api``).
    """
    if params.task_runner is not TaskRunnerKind.dask or params.dask_address is None:
        return
    from prefect.settings import PREFECT_API_URL  # only for an existing cluster

    if not PREFECT_API_URL.value():
        raise RunnerRefused(
            "--dask-address needs a Prefect server its workers report to: set PREFECT_API_URL here and on the cluster's workers"
            " (without it each worker would start a temporary server of its own), or use a local cluster (--dask-workers)"
        )
    scheme, _, rest = params.dask_address.rpartition("://")
    host, _, port = rest.rpartition(":")
    if scheme not in ("", "tcp", "tls") or not host or not port.isdigit():
        return  # another transport (ucx, inproc): Dask says what is wrong with it
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=DASK_CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__.replace("Error", " error").lower()
        raise RunnerRefused(f"Dask scheduler {params.dask_address} is not reachable: {reason}") from exc


def resolve_run(params: StageParams, stack: ExitStack) -> tuple[RunContext, Location, RecordedParams, str]:
    """Locations, the run id, and the recorded parameters; claims the run directory and holds
    its lease (``tasks.lease``) until ``stack`` closes.

    On ``resume`` the recorded parameters win (explicit conflicting ones are an error), the
    lease is taken (a run another process works in is refused), stale temp files of the killed
    process are removed, and a complete full run gets the LATEST update it may have been killed
    before. A new run refused later for selecting nothing (``NothingToRun``) is removed again.
    """
    shards, capture_dir, output, job_id = job_locations(params)
    check_runner(params)
    run_id = params.resume or params.run_id or new_run_id()
    run_dir = run_dir_of(output, job_id, run_id)
    requested = output_params(params, job_id, recorded_rollouts(shards))
    if params.resume:
        recorded = recorded_params(run_dir)
        check_resume(recorded, _explicit(params, requested))
        requested = recorded
        stack.enter_context(held(run_dir, run_id))
        discard_temporaries(run_dir)
        if not recorded.is_subset and (finished := finished_at(run_dir)) is not None:
            update_latest(output.child(job_id), run_id, finished, gate_passed(run_dir))  # a kill between _SUCCESS and LATEST
    else:
        claim(run_dir, requested)
        stack.push(_removed_when_nothing_to_run(run_dir))  # pushed first: it runs once the lease is released
        stack.enter_context(held(run_dir, run_id))
    for listener in tuple(_claim_listeners):
        listener(run_id, run_dir)
    ctx = RunContext(
        run_dir=run_dir,
        job_id=job_id,
        run_id=run_id,
        shards=shards,
        capture_dir=capture_dir,
        session_id=requested.session_id,
        agent_version=requested.agent_version,
        exporter_version=package_version(),
        ignored_checks=tuple(requested.ignored_checks),
        masked_verdicts=requested.masked_verdicts,
        resume=bool(params.resume),
    )
    return ctx, output.child(job_id), requested, run_id


ExitCallback = Callable[[type[BaseException] | None, BaseException | None, TracebackType | None], bool]


def _removed_when_nothing_to_run(run_dir: Location) -> ExitCallback:
    def exit_(_kind: type[BaseException] | None, exc: BaseException | None, _tb: TracebackType | None) -> bool:
        if isinstance(exc, NothingToRun):
            run_dir.remove_tree()  # only params.json: nothing was written
        return False

    return exit_


def _explicit(params: StageParams, requested: RecordedParams) -> dict[str, Any]:
    """The output parameters the caller set explicitly (a resume must agree with them); a followed glob's
    shards are those it matches now, which may be more than the run recorded when it was claimed."""
    followed = {"rollouts"} if params.follow else set()
    return {k: v for k, v in requested.model_dump().items() if (k in params.model_fields_set or k == "job_id") and k not in followed}


def preflight(params: StageParams) -> tuple[Shard, ...]:
    """The checks that stop a run before it starts, made without starting a flow run; the job's shards.

    The CLI calls this first so a typo or a taken run id costs one line, not a failed flow run;
    ``resolve_run`` repeats the checks inside the flow (deployments do not pass through here).
    """
    shards, _, output, job_id = job_locations(params)
    check_runner(params)
    run_id = params.resume or params.run_id
    if run_id is None:
        return shards
    run_dir = run_dir_of(output, job_id, run_id)
    if params.resume:
        check_resume(recorded_params(run_dir), _explicit(params, output_params(params, job_id, recorded_rollouts(shards))))
        check_free(run_dir, run_id)
    elif run_dir.child(PARAMS_FILE).is_file():
        raise RunConflict(f"run id already exists: {run_dir.url} (use --resume to continue it)")
    return shards


def run_record(params: StageParams, recorded: RecordedParams, ctx: RunContext, run_id: str, started_at: datetime) -> RunIdentity:
    """The manifest's ``run`` section: identity, scope and times of this run.

    A resumed run's ``started_at`` stays the time it was claimed (it was the resume's, so the
    time the run took was lost), and ``resumed_at`` is when this resume started.
    """
    resumed = bool(params.resume)
    return RunIdentity(
        run_id=run_id,
        job_id=recorded.job_id,
        run_dir=ctx.run_dir.url,
        scope="subset" if recorded.is_subset else "full",
        package_version=package_version(),
        started_at=(claimed_at(ctx.run_dir) if resumed else started_at).isoformat(),
        finished_at=datetime.now(UTC).isoformat(),
        resumed=resumed,
        resumed_at=started_at.isoformat() if resumed else None,
    )
