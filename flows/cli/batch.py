"""``evidence-stage batch``: process every job under a prefix (the bucket flow)."""

from __future__ import annotations

import argparse
from typing import Any

from flows.cli.options import add_model_options, model_from_args
from flows.params.batch import BatchParams

EXIT_JOB_FAILED = 1


def register(subcommands: Any) -> None:
    parser = subcommands.add_parser("batch", help="process every job under a prefix (skips jobs whose LATEST run is current)")
    add_model_options(parser, BatchParams)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from flows.batch import batch_flow
    from flows.execution.console import console

    params = model_from_args(BatchParams, args)
    with console.status(f"processing jobs under {params.prefix}"):
        summary = batch_flow(params)
    print_batch(summary)
    return EXIT_JOB_FAILED if summary["counts"]["failed"] else 0


def print_batch(summary: dict[str, Any]) -> None:
    """One line per job and per skipped folder, then where the summary is (stdout)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"evidence-stage batch {summary['batch_run_id']}")
    for column in ("job", "status", "reason", "run"):
        table.add_column(column)
    for entry in summary["jobs"]:
        table.add_row(entry["job_id"], entry["status"], entry["reason"], entry.get("run_id", ""))
    for folder in summary["skipped_folders"]:
        table.add_row(folder["folder"] or ".", "not a job", folder["reason"], "")
    out = Console()
    out.print(table)
    out.print(f"summary: {summary['summary_url']}")
