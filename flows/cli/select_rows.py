"""``evidence-stage select RUN_DIR_URL --verdict V [--agent A] [--min-reward R] --output URL``: matching main rows as JSONL."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from flows.cli.options import add_storage_options, storage_options_of

VERDICTS = ("healthy", "unhealthy", "unobserved")  # evidence's health verdicts, named here so --help loads no library


def register(subcommands: Any) -> None:
    parser = subcommands.add_parser(
        "select", help="write the enriched rows of a finished run's main rollouts that match (JSONL, input order), chosen on its tables/"
    )
    parser.add_argument("run_dir", metavar="RUN_DIR_URL", help="a finished run directory with tables/ (see `evidence-stage tables`)")
    parser.add_argument("--verdict", required=True, choices=VERDICTS, help="the health verdict the rollouts must have")
    parser.add_argument("--agent", help="only this agent's rollouts (agent_ref.name)")
    parser.add_argument(
        "--min-reward", type=float, metavar="R", help="only rollouts whose reward is at least R (a missing reward never matches)"
    )
    parser.add_argument("--output", required=True, metavar="URL", help="the JSONL file to write (replaced when it exists)")
    add_storage_options(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from tasks.storage import Location  # pyarrow loads only when selecting
    from tasks.tables.selection import Selection, no_match_hint, select_rollouts

    options = storage_options_of(args)
    output, run_dir = Location(args.output, options), Location(args.run_dir, options)
    selection = Selection(args.verdict, args.agent, args.min_reward)
    count = select_rollouts(run_dir, selection, output)
    print(f"{count} rollouts selected")
    print(output.url)
    if not count:  # the empty file is written: an empty selection is an answer, and the hint says why it may be one
        print(f"evidence-stage: {no_match_hint(run_dir, selection)}", file=sys.stderr)
    return 0
