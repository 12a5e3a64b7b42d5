"""``evidence-stage batch``: process every job under a prefix (the bucket flow)."""

from __future__ import annotations

import argparse
from typing import Any

from flows.cli.options import add_model_options, model_from_args
from flows.params.batch import BatchParams
from flows.params.console import ConsoleParams

EXIT_JOB_FAILED = 1


def register(subcommands: Any) -> None:
    parser = subcommands.add_parser("batch", help="process every job under a prefix (skips jobs whose LATEST run is current)")
    add_model_options(parser, BatchParams)
    add_model_options(parser, ConsoleParams)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from flows.cli.console import console, quiet_logs

    quiet_logs(model_from_args(ConsoleParams, args).verbose)
    from flows.batch import batch_flow  # Prefect loads here, after the logs' levels are set

    params = model_from_args(BatchParams, args)
    preflight(params)
    with console.status(f"processing jobs under {params.prefix}"):
        summary = batch_flow(params)
    print_batch(summary)
    return EXIT_JOB_FAILED if summary["counts"]["failed"] else 0


def preflight(params: BatchParams) -> None:
    """Refuse a prefix that holds nothing (missing, a missing bucket, a file) and an output that
    cannot be written, before a flow starts: either used to end in an empty table, exit 0."""
    from flows.execution.credentials import storage_options_with
    from tasks.storage import InputNotFound, Location
    from tasks.storage.probe import check_writable

    options = storage_options_with(params)
    prefix = Location(params.prefix, options)
    if not prefix.is_dir():
        if prefix.is_file():
            raise ValueError(f"{prefix.display} is a file: batch takes the folder its job folders are under (run takes one job)")
        raise InputNotFound(prefix.display, "no such folder: no jobs to process")
    check_writable(Location(params.output, options))


def print_batch(summary: dict[str, Any]) -> None:
    """One line per job and per skipped folder, then where the summary is (stdout)."""
    from rich.table import Table

    from flows.cli.console import stdout_console

    table = Table(title=f"evidence-stage batch {summary['batch_run_id']}")
    for column in ("job", "status", "reason", "run"):
        table.add_column(column)
    for entry in summary["jobs"]:
        table.add_row(entry["job_id"], entry["status"], entry["reason"], entry.get("run_id", ""))
    for folder in summary["skipped_folders"]:
        table.add_row(folder["folder"] or ".", "not a job", folder["reason"], "")
    out = stdout_console()
    out.print(table)
    out.print(f"summary: {summary['summary_url']}", soft_wrap=True, markup=False, highlight=False)
