"""The exports as Prefect tasks of the export flows (``flows/export.py``)."""

from __future__ import annotations

from collections.abc import Mapping

from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.export.mlflow import DEFAULT_EXPERIMENT, MlflowExport, export_to_mlflow
from tasks.export.otlp import TraceExport, export_to_otel
from tasks.storage import Location


@task(name="export-mlflow-run", cache_policy=NO_CACHE, persist_result=False)
def export_run_to_mlflow(run_dir: Location, tracking_uri: str, experiment: str = DEFAULT_EXPERIMENT) -> MlflowExport:
    """``export_to_mlflow`` as a task run of the flow that asked for it."""
    return export_to_mlflow(run_dir, tracking_uri, experiment)


@task(name="export-otel-traces", cache_policy=NO_CACHE, persist_result=False)
def export_run_to_otel(run_dir: Location, endpoint: str, headers: Mapping[str, str]) -> TraceExport:
    """``export_to_otel`` as a task run of the flow that asked for it."""
    return export_to_otel(run_dir, endpoint, headers)
