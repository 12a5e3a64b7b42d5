"""The ``evidence-stage`` command line: argument parsing -> a flow call or a drop-in command.

Errors that stop a run before it starts (missing inputs, a taken run id, bad arguments,
unreachable storage) print one line ``evidence-stage: error: <reason>`` and exit 2; usage
errors too (argparse would print the usage first).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Sequence
from importlib.metadata import version
from typing import Any, NoReturn

from pydantic import ValidationError

from flows.cli.commands import COMMANDS

EXIT_USAGE = 2
ERROR_PREFIX = "evidence-stage: error: "
EPHEMERAL_STARTUP_TIMEOUT = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
EPHEMERAL_STARTUP_DEFAULT_S = "120"
"""Without ``PREFECT_API_URL`` a run starts Prefect's ephemeral server, which Prefect waits 20 s
for. Its first start creates the database, and on a busy 2-core machine that took longer: the
README's example command failed with "Timed out while attempting to connect". A value the user
set is kept."""


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, like every other refusal (subparsers inherit it).

    A drop-in's parser (``add_parser(..., dropin=True)``) keeps 0.7.0's ``<command>: error:`` prefix,
    which its golden cases pin; every other refusal reads ``evidence-stage: error:``.
    """

    def __init__(self, *args: Any, dropin: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._error_prefix = f"{self.prog}: error: " if dropin else ERROR_PREFIX

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self._error_prefix}{message}\n")


DESCRIPTION = """\
Turn what a NeMo Gym evaluation job leaves behind (its rollouts JSONL and model-call captures)
into analysis-ready results, as NeMo Gym 0.7.0 defines them: enriched rollouts, health reports,
perf_summary, ATIF trajectories, a measured capability matrix and a report. Each run is written
to <output>/<job-id>/runs/<run-id>/. Start with: evidence-stage run --help"""

EPILOG = """\
exit status: 0 done; 2 refused before anything was written, with one line
"evidence-stage: error: <reason>" (the drop-ins health and export-atif keep 0.7.0's
prefix and codes); 1 batch: a job failed; 3 run written but its quality gate failed;
130 interrupted (Ctrl-C), with the command that resumes the run."""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="evidence-stage", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"evidence-stage {version('evidence-stage')}", help="print the version")
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    for module in COMMANDS:
        module.register(subcommands)
    # Each command's --help opens with what it does, as the list says it: argparse keeps the
    # list's entries (with their help) only in this private attribute, stable since Python 3.2.
    for listed in subcommands._choices_actions:  # noqa: SLF001
        command = subcommands.choices[listed.dest]
        if not command.description and listed.help:
            command.description = listed.help[0].upper() + listed.help[1:].rstrip(".") + "."
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault(EPHEMERAL_STARTUP_TIMEOUT, EPHEMERAL_STARTUP_DEFAULT_S)  # read when Prefect is imported
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command line as given (run's resume command)
    try:
        return args.handler(args)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        reason = str(first["ctx"]["error"]) if first["type"] == "value_error" else first["msg"]  # without "Value error, "
        return _fail(f"invalid parameter {where}: {reason}" if where else reason)
    except Exception as exc:  # noqa: BLE001 - the CLI turns any stop into one readable line
        return _fail(_reason(exc))


def _reason(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _fail(reason: str) -> int:
    print(f"{ERROR_PREFIX}{reason}", file=sys.stderr)
    return EXIT_USAGE


def entry() -> NoReturn:
    """The console script: :func:`main`, then the process ends without tearing the interpreter down.

    What an exit must do runs first, as at any exit: the wait for non-daemon threads and the
    threading exit hooks (Prefect's log and event drains), then every ``atexit`` handler
    (multiprocessing's cleanup, logging's flush). What is left is freeing the objects of every
    module a run loaded, which took 0.3 s of each run's wall time (measured on the example job).
    """
    code = main()
    _flush()
    logging.getLogger("EventsWorker").setLevel(
        logging.ERROR
    )  # "Still processing items" while the last events drain: the command has said its last line
    threading._shutdown()  # type: ignore[attr-defined]  # noqa: SLF001  # what interpreter shutdown calls first
    atexit._run_exitfuncs()  # noqa: SLF001  # then this, before os._exit skips the rest
    _flush()
    os._exit(code)


def _flush() -> None:
    """Flush stdout and stderr; a reader that went away (``| head``) is not an error here."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BrokenPipeError, ValueError):  # closed by the reader, or already closed
            stream.flush()


if __name__ == "__main__":
    entry()
