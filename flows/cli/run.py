"""``evidence-stage run``: process one job through the stage flow."""

from __future__ import annotations

import argparse
from typing import Any

from flows.cli.options import add_model_options, model_from_args
from flows.params.console import RunConsoleParams
from flows.params.stage import StageParams


def register(subcommands: Any) -> None:
    parser = subcommands.add_parser("run", help="process one evaluation job into a new run directory")
    add_model_options(parser, StageParams)
    add_model_options(parser, RunConsoleParams)
    parser.set_defaults(handler=handle)


def params_from_args(args: argparse.Namespace) -> StageParams:
    """Only the options the user gave become explicitly-set fields (resume compares those)."""
    return model_from_args(StageParams, args)


def handle(args: argparse.Namespace) -> int:
    from flows.cli.console import quiet_logs, run_with_progress

    shown = model_from_args(RunConsoleParams, args)
    quiet_logs(shown.verbose)
    return run_with_progress(params_from_args(args), getattr(args, "argv", ()), as_json=shown.json_summary)
