"""Where attempt groups execute, from the flow's parameters: threads, processes, or Dask.

- ``thread``: group tasks run in a bounded thread pool of the flow process (one core: the
  per-attempt work is pure Python and holds the GIL).
- ``process``: group tasks still run as threads of the flow process, so each Prefect task run
  costs what a thread task costs (Prefect's own process runner spent about 0.1 s of CPU per
  task run and ~2 s per worker start-up on Prefect imports, measured on two cores), and each
  hands its group, in chunks, to an attempt pool of ``max_workers`` processes. The pool forks from a forkserver that imported
  ``tasks.attempts.group`` (no Prefect) once, so workers start in milliseconds and no worker ever
  talks to the Prefect API; each worker exits when the flow process does (``tasks.attempts.lifeline``).
- ``dask``: task runs execute in Dask workers, which talk to the Prefect API themselves.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

from prefect.settings import PREFECT_API_URL
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from flows.execution.forkserver import forkserver_context
from flows.params.stage import StageParams, TaskRunnerKind
from tasks.attempts.lifeline import start_worker

T = TypeVar("T")

# Group tasks in flight per pool worker: one computing, one queued behind it while its
# task thread does Prefect's bookkeeping, so no worker waits for orchestration.
TASKS_PER_WORKER = 2


def build_runner(params: StageParams) -> TaskRunner:
    """The runner that executes attempt group tasks; bounded in every case."""
    if params.task_runner is TaskRunnerKind.process:
        return ThreadPoolTaskRunner(max_workers=params.max_workers * TASKS_PER_WORKER)
    if params.task_runner is TaskRunnerKind.dask:
        from prefect_dask.task_runners import DaskTaskRunner

        if params.dask_address:
            return DaskTaskRunner(address=params.dask_address)
        # The scheduler's HTTP server on a free port: with None it took Dask's 8787, and a second
        # local cluster on the machine printed a 4-line "Port 8787 is already in use" warning.
        return DaskTaskRunner(
            cluster_kwargs={"n_workers": params.local_dask_workers, "threads_per_worker": 1, "processes": True, "dashboard_address": ":0"}
        )
    return ThreadPoolTaskRunner(max_workers=params.max_workers)


def task_argument(params: StageParams, value: T) -> T | quote:
    """``value`` as a group task's parameter: quoted for the runners of this process, as is on Dask.

    Prefect walks a parameter field by field looking for futures: about 70 ms of the flow's CPU
    per task run for a group of attempts, which a quote skips. Dask's transport turns a quote
    (a tuple) into a plain tuple, so the task would get the wrapper instead of the value.
    """
    return value if params.task_runner is TaskRunnerKind.dask else quote(value)


def parallel_groups(params: StageParams) -> int:
    """Group tasks that compute at once: the workers (threads, attempt processes, Dask workers)."""
    if params.task_runner is TaskRunnerKind.dask and not params.dask_address:
        return params.local_dask_workers
    return params.max_workers


def runner_slots(params: StageParams) -> int:
    """Group tasks the runner executes at once: the flow keeps one more in flight, so none waits for it."""
    if params.task_runner is TaskRunnerKind.process:
        return parallel_groups(params) * TASKS_PER_WORKER
    return parallel_groups(params)


@contextmanager
def attempt_pool(params: StageParams) -> Iterator[Executor | None]:
    """The worker processes of the ``process`` runner (None for the other kinds)."""
    if params.task_runner is not TaskRunnerKind.process:
        yield None
        return
    with ProcessPoolExecutor(
        max_workers=params.max_workers,
        mp_context=forkserver_context(params),
        initializer=start_worker,
        initargs=(dict(os.environ), os.getpid()),
    ) as pool:
        for _ in range(params.max_workers):
            pool.submit(int)  # start every worker now, in the background, not at the first group
        yield pool


@contextmanager
def shared_api(params: StageParams) -> Iterator[None]:
    """Dask workers must report to this flow's Prefect API, never start their own.

    Without ``PREFECT_API_URL`` a flow runs against an ephemeral server in a subprocess, and
    every worker process would start another temporary server of its own (seconds each, and
    its task runs invisible). Export the running ephemeral server's URL while workers spawn.
    """
    if params.task_runner is not TaskRunnerKind.dask or PREFECT_API_URL.value():
        yield
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    server.start()  # already running for this flow run: returns at once
    os.environ["PREFECT_API_URL"] = server.api_url
    try:
        yield
    finally:
        os.environ.pop("PREFECT_API_URL", None)
