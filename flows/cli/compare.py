"""``evidence-stage compare RUN_A_URL RUN_B_URL``: what changed from run A to run B."""

from __future__ import annotations

import argparse
from typing import Any

from flows.cli.options import add_storage_options, storage_options_of, url_argument


def register(subcommands: Any) -> None:
    parser = subcommands.add_parser("compare", help="compare two run directories (compare.json, compare.md, compare.html)")
    parser.add_argument("run_a", metavar="RUN_A_URL", type=url_argument, help="the reference run directory")
    parser.add_argument("run_b", metavar="RUN_B_URL", type=url_argument, help="the run compared with it (differences are B - A)")
    parser.add_argument(
        "--output", metavar="URL", type=url_argument, help="folder for the comparison (default <job dir of B>/compare/<run A>--<run B>/)"
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    add_storage_options(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from tasks.compare.run_dirs import compare_run_dirs  # the evidence library loads only when comparing
    from tasks.rundir import COMPARE_FILES
    from tasks.storage import Location

    options = storage_options_of(args)
    output = Location(args.output, options) if args.output else None
    result = compare_run_dirs(Location(args.run_a, options), Location(args.run_b, options), output, seed=args.seed)
    changed = f" ({', '.join(result.changed)})" if result.changed else ""
    print(f"{result.status}{changed}; {'trusted' if result.trusted else 'not to be trusted as is: see compare.md'}")
    for name in COMPARE_FILES:
        print(Location(result.output, options).child(name).url)
    return 0
