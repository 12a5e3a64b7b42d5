"""``evidence-stage compare RUN_A_URL RUN_B_URL``: what changed from run A to run B (the compare flow's options)."""

from __future__ import annotations

import argparse
from typing import Any

from flows.cli.options import add_model_options, model_from_args
from flows.params.compare import CompareParams


def register(subcommands: Any) -> None:
    parser = subcommands.add_parser("compare", help="compare two run directories (compare.json, compare.md, compare.html)")
    add_model_options(parser, CompareParams)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from flows.execution.credentials import storage_options_with
    from tasks.compare.run_dirs import compare_run_dirs  # the evidence library loads only when comparing
    from tasks.rundir import COMPARE_FILES
    from tasks.storage import Location

    params = model_from_args(CompareParams, args)
    options = storage_options_with(params)
    # The URLs as given, not the model's file:// form: compare.json records them and the lines below print them.
    output = Location(args.output, options) if args.output else None
    result = compare_run_dirs(Location(args.run_a, options), Location(args.run_b, options), output, seed=params.seed)
    changed = f" ({', '.join(result.changed)})" if result.changed else ""
    print(f"{result.status}{changed}; {'trusted' if result.trusted else 'not to be trusted as is: see compare.md'}")
    for name in COMPARE_FILES:
        print(Location(result.output, options).child(name).url)
    return 0
