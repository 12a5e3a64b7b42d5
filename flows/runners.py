"""Task runners from the flow's parameters: threads, processes, or Dask (prefect-dask)."""

from __future__ import annotations

from prefect.task_runners import ProcessPoolTaskRunner, TaskRunner, ThreadPoolTaskRunner

from flows.params import StageParams, TaskRunnerKind


def build_runner(params: StageParams) -> TaskRunner:
    """The runner that executes attempt groups; bounded in every case."""
    if params.task_runner is TaskRunnerKind.process:
        return ProcessPoolTaskRunner(max_workers=params.max_workers)
    if params.task_runner is TaskRunnerKind.dask:
        from prefect_dask import DaskTaskRunner

        if params.dask_address:
            return DaskTaskRunner(address=params.dask_address)
        return DaskTaskRunner(
            cluster_kwargs={"n_workers": params.dask_workers, "threads_per_worker": 1, "processes": True, "dashboard_address": None}
        )
    return ThreadPoolTaskRunner(max_workers=params.max_workers)
