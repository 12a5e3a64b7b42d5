"""``evidence-stage health ROLLOUTS_URL OUT_URL``: a drop-in for ``gym eval health-check``.

Reads an existing rollouts file (any fsspec URL), writes ``quality_summary.json`` and
``rollout_verdicts.jsonl`` into OUT_URL exactly as 0.7.0 does, and prints 0.7.0's two-line
report. Unknown check ids and a missing file stop it like 0.7.0's parser errors (exit 2).
"""

from __future__ import annotations

import argparse
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from flows.cli.options import add_storage_options, storage_options_of
from flows.params.storage import url_argument

if TYPE_CHECKING:
    from tasks.storage import Location


def check_ids(text: str) -> str:
    """One ``--ignore-check`` value, refused while parsing (as 0.7.0's parser does) when an entry is empty."""
    from evidence import split_check_ids

    try:
        split_check_ids(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return text


def as_given(argument: str, location: Location) -> str:
    """How 0.7.0 quotes a path argument in locators and its report: the path as typed, through
    ``pathlib`` (so ``./x`` reads ``x``), relative if it was; a URL as the stage shows it."""
    return str(PurePath(argument)) if location.is_local and "://" not in argument else location.display


def register(subcommands: Any) -> None:
    parser = subcommands.add_parser("health", dropin=True, help="health-check an existing rollouts file (gym eval health-check)")
    parser.add_argument(
        "rollouts", metavar="ROLLOUTS_URL", help="the rollouts JSONL to check (local path, file://, s3://)", type=url_argument
    )
    parser.add_argument("output", metavar="OUT_URL", help="folder for quality_summary.json and rollout_verdicts.jsonl", type=url_argument)
    parser.add_argument(
        "--ignore-check",
        "--ignore-checks",
        "--ignore",
        action="append",
        default=[],
        type=check_ids,
        dest="ignored",
        metavar="ID",
        help=(
            "a health check id to ignore, or several separated by commas"
            " (repeatable; --ignore-checks and --ignore are 0.7.0's aliases; default: none)"
        ),
    )
    add_storage_options(parser)
    parser.set_defaults(handler=handle, parser=parser)


def handle(args: argparse.Namespace) -> int:
    from evidence import SUMMARY_NAME, VERDICTS_NAME, UnknownHealthCheck, health_check_bytes, parse_ignored_checks
    from tasks.storage import InputNotFound, Location, StorageError

    options = storage_options_of(args)
    source, out = Location(args.rollouts, options), Location(args.output, options)
    try:  # 0.7.0 normalises the ignore list before it looks at any path
        ignored = parse_ignored_checks(args.ignored)
    except UnknownHealthCheck as exc:
        args.parser.error(str(exc))
    try:
        data = source.read_bytes()
    except InputNotFound:
        args.parser.error(f"Rollout JSONL not found: {as_given(args.rollouts, source)}")
    except StorageError as exc:  # one prefix for every refusal of this command: 0.7.0's, which its golden cases pin
        args.parser.error(f"{as_given(args.rollouts, source)} is a folder, not a rollouts file" if source.is_dir() else str(exc))
    files = health_check_bytes(data, rollouts_path=as_given(args.rollouts, source), output_dir=as_given(args.output, out), ignored=ignored)
    try:
        out.child(SUMMARY_NAME).write_bytes(files.quality_summary.encode())
        out.child(VERDICTS_NAME).write_bytes(files.rollout_verdicts.encode())
    except StorageError as exc:
        args.parser.error(f"cannot write the reports into {as_given(args.output, out)}: {exc.message}")
    print(files.report)
    return 0
