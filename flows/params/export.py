"""The export flows' parameters: a finished run directory to MLflow, or its traces to OTLP/HTTP."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from flows.params.storage import StorageOptions, Url


class MlflowExportParams(BaseModel):
    """Export one finished run directory to an MLflow tracking server."""

    model_config = ConfigDict(extra="forbid")

    run_dir: Url = Field(title="Run directory", description="URL of a finished run directory (`<output>/<job-id>/runs/<run-id>`).")
    tracking_uri: str = Field(
        title="MLflow tracking URI", description="http(s) URL of the MLflow server (its /v1/traces receives the traces)."
    )
    experiment: str = Field(
        default="evidence-stage", min_length=1, title="Experiment", description="MLflow experiment name (created when absent)."
    )
    storage_options: StorageOptions = Field(
        default_factory=dict, title="Storage options", description="fsspec options without credentials, e.g. endpoint_url."
    )


class OtelExportParams(BaseModel):
    """Export one finished run directory's rollout traces to an OTLP/HTTP endpoint."""

    model_config = ConfigDict(extra="forbid")

    run_dir: Url = Field(title="Run directory", description="URL of a finished run directory (`<output>/<job-id>/runs/<run-id>`).")
    endpoint: str = Field(title="OTLP endpoint", description="OTLP/HTTP URL; `/v1/traces` is appended unless the URL ends with it.")
    headers: dict[str, str] = Field(default_factory=dict, title="Headers", description="HTTP headers sent with every export request.")
    storage_options: StorageOptions = Field(
        default_factory=dict, title="Storage options", description="fsspec options without credentials, e.g. endpoint_url."
    )
