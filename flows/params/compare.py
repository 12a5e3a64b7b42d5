"""Two finished runs compared: ``CompareParams`` (the compare deployment's form, ``compare``'s options)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from flows.params.cli import Cli
from flows.params.fields import OptionalText, field_of
from flows.params.storage import OptionalUrl, StorageAccess, StorageOptions, Url, url_argument


class CompareParams(BaseModel):
    """Which two runs to compare (B against A) and where the comparison goes."""

    model_config = ConfigDict(extra="forbid")

    run_a: Annotated[Url, Cli(positional=True, metavar="RUN_A_URL", parse=url_argument)] = Field(
        title="Run A", description="URL of the reference run directory (`<output>/<job>/runs/<run-id>`)."
    )
    run_b: Annotated[Url, Cli(positional=True, metavar="RUN_B_URL", parse=url_argument)] = Field(
        title="Run B", description="URL of the run compared with it; differences are B − A."
    )
    output: Annotated[OptionalUrl, Cli(metavar="URL", parse=url_argument)] = Field(
        default=None,
        title="Output",
        description="URL of the folder for the comparison; default `<job dir of B>/compare/<run A>--<run B>/`.",
    )
    seed: Annotated[int, Cli(metavar="N")] = Field(
        default=0, ge=0, title="Bootstrap seed", description="Seed of the paired bootstrap: the same seed gives the same file."
    )
    storage_options: StorageOptions = field_of(StorageAccess, "storage_options")
    aws_credentials_block: OptionalText = field_of(StorageAccess, "aws_credentials_block")
