"""The ``evidence-stage`` command line: argument parsing -> a flow call or a drop-in command.

Errors that stop a run before it starts (missing inputs, a taken run id, bad arguments,
unreachable storage) print one line ``evidence-stage: error: <reason>`` and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pydantic import ValidationError

from flows.commands import COMMANDS

EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evidence-stage", description=__doc__.splitlines()[0])
    subcommands = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        module.register(subcommands)
    return parser


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
