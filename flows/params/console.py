"""How a command talks on the terminal: options of the command line only, no flow's parameters (no form has them)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from flows.params.cli import Cli


class ConsoleParams(BaseModel):
    """The options of every command that runs a flow."""

    model_config = ConfigDict(extra="forbid")

    verbose: bool = Field(
        default=False,
        description="Print Prefect's and Dask's INFO logs on stderr; without it only their warnings and errors"
        " (the Prefect server gets every log either way).",
    )


class RunConsoleParams(ConsoleParams):
    """``run``'s: its summary for a script, too."""

    json_summary: Annotated[bool, Cli(flag="--json")] = Field(
        default=False,
        description="Print the summary as one JSON line on stdout (run_dir, run_id, counts, verdicts, scores, gate) instead of tables.",
    )
