"""``evidence-stage tables RUN_DIR_URL``: build ``tables/`` (Parquet) and ``viewer/`` for a finished run from its outputs alone."""

from __future__ import annotations

import argparse
from typing import Any

from flows.cli.options import add_storage_options, storage_options_of


def register(subcommands: Any) -> None:
    parser = subcommands.add_parser(
        "tables", help="build the analysis tables (tables/*.parquet) and the rollout viewer of a finished run directory from its outputs"
    )
    parser.add_argument("run_dir", metavar="RUN_DIR_URL", help="a finished run directory (<output>/<job-id>/runs/<run-id>)")
    parser.add_argument(
        "--replace", action="store_true", help="build them again when the run already has tables/ (current ones are left as they are)"
    )
    add_storage_options(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from evidence.tables import SCHEMA_VERSION  # pyarrow and the library load only when building
    from tasks.storage import Location
    from tasks.tables.build import TablesError, build_from_outputs, tables_folder
    from tasks.tables.finished import finished_run, tables_version

    run_dir = Location(args.run_dir, storage_options_of(args))
    job_id, run_id = finished_run(run_dir)
    version = tables_version(run_dir)
    if version == SCHEMA_VERSION and not args.replace:  # what was asked for is there: not an error
        print(f"tables are current (schema version {version}): {tables_folder(run_dir).display} (--replace builds them again)")
        return 0
    if version is not None and not args.replace:
        raise TablesError(
            f"the run already has tables/ of schema version {version} (this evidence-stage writes {SCHEMA_VERSION}): "
            "--replace builds them again"
        )
    summary = build_from_outputs(run_dir, job_id, run_id)
    for name, rows in summary.rows.items():
        print(f"{name}: {rows} rows, {summary.bytes[name]} bytes")
    print(summary.folder)
    return 0
