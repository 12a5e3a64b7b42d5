"""The comparison flow: two run directories in, ``compare.json``/``.md``/``.html`` out.

Its parameters are one Pydantic model, so the Prefect UI renders a form for it.
"""

from __future__ import annotations

from typing import Any

from prefect import get_run_logger
from pydantic import BaseModel, ConfigDict, Field

from flows.execution.credentials import storage_options_with
from flows.execution.modelflow import flow
from flows.params.fields import OptionalText
from flows.params.storage import OptionalUrl, StorageOptions, Url
from tasks.compare.task import compare_task, publish_comparison
from tasks.storage import Location


class CompareParams(BaseModel):
    """Which two runs to compare (B against A) and where the comparison goes."""

    model_config = ConfigDict(extra="forbid")

    run_a: Url = Field(title="Run A", description="URL of the reference run directory (`<output>/<job>/runs/<run-id>`).")
    run_b: Url = Field(title="Run B", description="URL of the run compared with it; differences are B − A.")
    output: OptionalUrl = Field(
        default=None,
        title="Output",
        description="URL of the folder for the comparison; default `<job dir of B>/compare/<run A>--<run B>/`.",
    )
    seed: int = Field(
        default=0, ge=0, title="Bootstrap seed", description="Seed of the paired bootstrap: the same seed gives the same file."
    )
    storage_options: StorageOptions = Field(
        default_factory=dict, title="Storage options", description="fsspec options without credentials, e.g. endpoint_url."
    )
    aws_credentials_block: OptionalText = Field(
        default=None,
        title="AWS credentials block",
        description="Name of a prefect-aws AwsCredentials block for S3; blank: the environment.",
    )


@flow(name="evidence-stage", log_prints=False, persist_result=False)  # one flow name: deployments read evidence-stage/<name>
def compare_flow(params: CompareParams) -> dict[str, Any]:
    """Compare two finished runs and attach the comparison to the flow run."""
    options = storage_options_with(params.storage_options, params.aws_credentials_block)
    output = Location(params.output, options) if params.output else None
    result = compare_task(Location(params.run_a, options), Location(params.run_b, options), output, seed=params.seed)
    publish_comparison(result)
    get_run_logger().info("comparison %s (trusted: %s) at %s", result.status, result.trusted, result.output)
    return result.summary()
