"""The export flows' parameters (``export mlflow|otel``'s options): a finished run directory to
MLflow, or its traces to OTLP/HTTP; the deployments' targets (``flows/deployments.py``) take these fields."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from flows.params.cli import Cli, key_value
from flows.params.fields import OptionalText, field_of
from flows.params.storage import StorageAccess, StorageOptions, Url, url_argument

RunDir = Annotated[Url, Cli(positional=True, metavar="RUN_DIR_URL", parse=url_argument)]


class MlflowExportParams(BaseModel):
    """Export one finished run directory to an MLflow tracking server."""

    model_config = ConfigDict(extra="forbid")

    run_dir: RunDir = Field(title="Run directory", description="URL of a finished run directory (`<output>/<job-id>/runs/<run-id>`).")
    tracking_uri: Annotated[str, Cli(metavar="URI")] = Field(
        title="MLflow tracking URI", description="http(s) URL of the MLflow server (its /v1/traces receives the traces)."
    )
    experiment: Annotated[str, Cli(metavar="NAME")] = Field(
        default="evidence-stage", min_length=1, title="Experiment", description="MLflow experiment name (created when absent)."
    )
    storage_options: StorageOptions = field_of(StorageAccess, "storage_options")
    aws_credentials_block: OptionalText = field_of(StorageAccess, "aws_credentials_block")


class OtelExportParams(BaseModel):
    """Export one finished run directory's rollout traces to an OTLP/HTTP endpoint."""

    model_config = ConfigDict(extra="forbid")

    run_dir: RunDir = field_of(MlflowExportParams, "run_dir")
    endpoint: Annotated[str, Cli(metavar="URL")] = Field(
        title="OTLP endpoint", description="OTLP/HTTP URL; `/v1/traces` is appended unless the URL ends with it."
    )
    headers: Annotated[dict[str, str], Cli(flag="--header", metavar="KEY=VALUE", append=True, parse=key_value, collect=dict)] = Field(
        default_factory=dict, title="Headers", description="HTTP headers sent with every export request."
    )
    storage_options: StorageOptions = field_of(StorageAccess, "storage_options")
    aws_credentials_block: OptionalText = field_of(StorageAccess, "aws_credentials_block")
