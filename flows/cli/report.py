"""``evidence-stage report RUN_DIR_URL``: regenerate ``report.html`` for an existing run."""

from __future__ import annotations

import argparse
from typing import Any

from flows.cli.options import add_storage_options, storage_options_of
from flows.params.storage import url_argument


def register(subcommands: Any) -> None:
    parser = subcommands.add_parser("report", help="regenerate report.html of an existing run directory")
    parser.add_argument(
        "run_dir", metavar="RUN_DIR_URL", type=url_argument, help="a finished run directory (<output>/<job-id>/runs/<run-id>)"
    )
    add_storage_options(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from tasks.publish.report import rebuild_histograms, render_run_report
    from tasks.rundir import MANIFEST_FILE, RunPaths, finished_run
    from tasks.storage import InputNotFound, Location

    run_dir = Location(args.run_dir, storage_options_of(args))
    paths = RunPaths(run_dir)
    if not paths.manifest.exists():
        raise InputNotFound(paths.manifest.url, f"no {MANIFEST_FILE}: not a finished run directory")
    html, _, _ = render_run_report(run_dir, finished_run(run_dir), rebuild_histograms(run_dir))
    paths.report.write_bytes(html.encode())
    print(paths.report.url)
    return 0
