"""``evidence-stage batch``: process every job under a prefix (the bucket flow)."""

from __future__ import annotations

import argparse
from typing import Any

from flows.cli.options import add_job_options, gate_of, storage_options_of
from tasks.inputs.layout import DEFAULT_CAPTURE_DIR, DEFAULT_EXCLUDE_GLOBS, DEFAULT_ROLLOUTS_GLOB, DEFAULT_SHARD_GLOB

EXIT_JOB_FAILED = 1


def register(subcommands: Any) -> None:
    parser = subcommands.add_parser("batch", help="process every job under a prefix (skips jobs whose LATEST run is current)")
    parser.add_argument("prefix", help="URL under which job folders are found, e.g. s3://bucket/evals")
    parser.add_argument("--output", required=True, help="output root URL")
    parser.add_argument("--force", action="store_true", help="process every job, even current ones")
    parser.add_argument(
        "--compare-previous", action="store_true", help="compare each processed job with its previous complete run (compare.json/.md/.html, artifact)"
    )
    parser.add_argument("--max-concurrency", type=int, help="jobs processed at the same time (default 2)")
    parser.add_argument("--rollouts-glob", help=f"rollouts file name glob (default {DEFAULT_ROLLOUTS_GLOB!r})")
    parser.add_argument(
        "--exclude-glob", action="append", dest="exclude_globs", metavar="GLOB",
        help=f"file name glob that is never a rollouts file (repeatable; replaces the defaults {', '.join(DEFAULT_EXCLUDE_GLOBS)})",
    )
    parser.add_argument("--shard-glob", help=f"a folder whose rollouts files all match this glob is one sharded job (default {DEFAULT_SHARD_GLOB!r})")
    parser.add_argument("--capture-dir-name", help=f"folder that marks a job folder (default {DEFAULT_CAPTURE_DIR!r})")
    add_job_options(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from flows.batch import BatchParams, batch_flow
    from flows.execution.console import console

    fields = {name: getattr(args, name) for name in BatchParams.model_fields if getattr(args, name, None) not in (None, [], False)}
    if args.storage_option:
        fields["storage_options"] = storage_options_of(args)
    if (gate := gate_of(args)) is not None:
        fields["gate"] = gate
    params = BatchParams(**fields)
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
