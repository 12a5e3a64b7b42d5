"""The ``evidence-stage`` command line: argument parsing -> a flow call or a drop-in command.

Errors that stop a run before it starts (missing inputs, a taken run id, bad arguments,
unreachable storage) print one line ``evidence-stage: error: <reason>`` and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

import orjson
from pydantic import ValidationError

from flows.params import StageParams, TaskRunnerKind

EXIT_USAGE = 2


def _storage_option(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    try:
        return key, orjson.loads(raw)
    except orjson.JSONDecodeError:
        return key, raw


def _add_storage(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--storage-option", action="append", type=_storage_option, default=[], metavar="KEY=VALUE",
        help="fsspec storage option (repeatable), e.g. endpoint_url=http://127.0.0.1:5000",
    )


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rollouts", required=True, help="rollouts JSONL URL")
    parser.add_argument("--failures", help="failures sidecar URL (default: <stem>_failures.jsonl when it exists)")
    parser.add_argument("--capture-dir", required=True, help="model-call capture directory URL")
    parser.add_argument("--output", required=True, help="output root URL")
    parser.add_argument("--job-id")
    parser.add_argument("--run-id")
    parser.add_argument("--resume", metavar="RUN_ID", help="continue an interrupted run in place")
    parser.add_argument("--attempts-per-task", type=int)
    parser.add_argument("--session-id", help="ATIF session id (default: the job id)")
    parser.add_argument("--agent-version", help="ATIF agent version (default: the package version)")
    parser.add_argument("--ignore-check", action="append", default=[], dest="ignored_checks", metavar="ID")
    parser.add_argument("--atif-all-or-nothing", action="store_true", default=None)
    parser.add_argument("--rollout-id", action="append", default=[], dest="rollout_ids", metavar="ID", help="subset rerun")
    parser.add_argument("--rollout-glob", help="subset rerun: rollout ids matching this glob")
    parser.add_argument("--task-runner", choices=[k.value for k in TaskRunnerKind])
    parser.add_argument("--max-workers", type=int)
    parser.add_argument("--dask-address")
    parser.add_argument("--dask-workers", type=int)
    _add_storage(parser)


def params_from_args(args: argparse.Namespace) -> StageParams:
    """Only the options the user gave become explicitly-set fields (resume compares those)."""
    fields = {
        name: getattr(args, name)
        for name in StageParams.model_fields
        if getattr(args, name, None) not in (None, [])
    }
    if args.storage_option:
        fields["storage_options"] = dict(args.storage_option)
    return StageParams(**fields)


def cmd_run(args: argparse.Namespace) -> int:
    from flows.console import run_with_progress

    return run_with_progress(params_from_args(args))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evidence-stage", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="process one evaluation job into a new run directory")
    _add_run_arguments(run)
    run.set_defaults(handler=cmd_run)
    for register in _EXTRA_COMMANDS:
        register(commands)
    return parser


_EXTRA_COMMANDS: list[Callable[[Any], None]] = []


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return _fail(f"invalid parameter {where}: {first['msg']}")
    except Exception as exc:  # noqa: BLE001 - the CLI turns any stop into one readable line
        return _fail(_reason(exc))


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text


def _fail(reason: str) -> int:
    print(f"evidence-stage: error: {reason}", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
