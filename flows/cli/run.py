"""``evidence-stage run``: process one job through the stage flow."""

from __future__ import annotations

import argparse
from typing import Any

from flows.cli.options import add_job_options, gate_of, storage_options_of
from flows.params import StageParams


def register(subcommands: Any) -> None:
    parser = subcommands.add_parser("run", help="process one evaluation job into a new run directory")
    parser.add_argument(
        "--rollouts", required=True, action="append",
        help="rollouts JSONL URL; repeat it, or give globs / comma-separated globs, for a sharded job (sidecars found beside each shard)",
    )
    parser.add_argument("--failures", help="failures sidecar URL of a one-file job (default: <stem>_failures.jsonl when it exists)")
    parser.add_argument("--capture-dir", required=True, help="model-call capture directory URL")
    parser.add_argument("--output", required=True, help="output root URL")
    parser.add_argument("--job-id")
    parser.add_argument("--run-id")
    parser.add_argument("--resume", metavar="RUN_ID", help="continue an interrupted run in place")
    parser.add_argument("--session-id", help="ATIF session id (default: the job id)")
    parser.add_argument("--agent-version", help="ATIF agent version (default: the package version)")
    parser.add_argument("--rollout-id", action="append", default=[], dest="rollout_ids", metavar="ID", help="subset rerun")
    parser.add_argument("--rollout-glob", help="subset rerun: rollout ids matching this glob")
    add_job_options(parser)
    parser.set_defaults(handler=handle)


def params_from_args(args: argparse.Namespace) -> StageParams:
    """Only the options the user gave become explicitly-set fields (resume compares those)."""
    fields = {name: getattr(args, name) for name in StageParams.model_fields if getattr(args, name, None) not in (None, [])}
    if args.storage_option:
        fields["storage_options"] = storage_options_of(args)
    if (gate := gate_of(args)) is not None:
        fields["gate"] = gate
    if len(args.rollouts) == 1:  # one --rollouts stays the one-file form params.json has always recorded
        fields["rollouts"] = args.rollouts[0]
    return StageParams(**fields)


def handle(args: argparse.Namespace) -> int:
    from flows.execution.console import run_with_progress

    return run_with_progress(params_from_args(args))
