"""The export flows: a finished run directory into MLflow, or its traces to an OTLP collector.

Deployed with a trigger on ``evidence-stage.run.completed`` (``flows/deployments.py``), so every
finished run follows into the tracking store; the CLI (``evidence-stage export``) calls the same
tasks without Prefect.
"""

from __future__ import annotations

from typing import Any

from prefect.artifacts import create_link_artifact, create_markdown_artifact

from flows.execution.credentials import storage_options_with
from flows.execution.modelflow import flow
from flows.params.export import MlflowExportParams, OtelExportParams
from tasks.export import TraceExport
from tasks.export.task import export_run_to_mlflow, export_run_to_otel
from tasks.storage import Location

MLFLOW_FLOW = "evidence-stage-export-mlflow"
OTEL_FLOW = "evidence-stage-export-otel"


def _traces_markdown(traces: TraceExport) -> str:
    lines = [f"**{traces.traces}** traces ({traces.spans} spans) sent.", "", "| rows skipped | reason |", "|---|---|"]
    lines += [f"| {count} | {reason} |" for reason, count in sorted(traces.skipped.items())]
    return "\n".join(lines)


@flow(name=MLFLOW_FLOW, log_prints=False)
def export_mlflow_flow(params: MlflowExportParams) -> dict[str, Any]:
    """Create or update the MLflow run of one finished stage run (idempotent)."""
    result = export_run_to_mlflow(Location(params.run_dir, storage_options_with(params)), params.tracking_uri, params.experiment)
    create_link_artifact(key="evidence-stage-mlflow-run", link=result.run_url(params.tracking_uri), link_text=f"MLflow run {result.run_id}")
    create_markdown_artifact(key="evidence-stage-mlflow-traces", markdown=_traces_markdown(result.traces))
    return result.as_dict()


@flow(name=OTEL_FLOW, log_prints=False)
def export_otel_flow(params: OtelExportParams) -> dict[str, Any]:
    """Send one finished run's rollout traces to an OTLP/HTTP endpoint (same ids on every export)."""
    result = export_run_to_otel(Location(params.run_dir, storage_options_with(params)), params.endpoint, params.headers)
    create_markdown_artifact(key="evidence-stage-otel-traces", markdown=_traces_markdown(result))
    return result.as_dict()
