"""Options shared by several subcommands."""

from __future__ import annotations

import argparse
import math
from typing import Any

import orjson

from flows.params import GateLimits, TaskRunnerKind, gate_limits


def key_value(text: str) -> tuple[str, str]:
    """``key=value`` as a pair of strings (the value may be empty)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key, value


def storage_option(text: str) -> tuple[str, Any]:
    """``key=value``; the value is parsed as JSON when it is JSON (true, 3, "x"), else kept as text."""
    key, raw = key_value(text)
    try:
        return key, orjson.loads(raw)
    except orjson.JSONDecodeError:
        return key, raw


def gate_pair(text: str) -> tuple[str, float]:
    """``NAME=VALUE`` of one quality-gate limit; the name is checked with the others (``gate_of``)."""
    name, _, raw = text.partition("=")
    try:
        return name, float(raw)
    except ValueError:
        return name, math.nan  # refused by gate_limits with the limit's name


def gate_of(args: argparse.Namespace) -> GateLimits | None:
    """The ``--gate`` limits given, or None when there are none.

    Raises:
        GateError: an unknown limit name or a value that is not a share (one line in the CLI).
    """
    return gate_limits(dict(args.gate_limits)) if args.gate_limits else None


def add_storage_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--storage-option", action="append", type=storage_option, default=[], metavar="KEY=VALUE",
        help="fsspec storage option (repeatable), e.g. endpoint_url=http://127.0.0.1:5000",
    )


def storage_options_of(args: argparse.Namespace) -> dict[str, Any]:
    return dict(args.storage_option)


def add_job_options(parser: argparse.ArgumentParser) -> None:
    """Options that shape how a job is processed, shared by ``run`` and ``batch``."""
    parser.add_argument("--attempts-per-task", type=int)
    parser.add_argument(
        "--ignore-check", action="append", default=[], dest="ignored_checks", metavar="ID",
        help="health check id to ignore, or ids separated by commas (repeatable); an unknown id is refused",
    )
    parser.add_argument("--atif-all-or-nothing", action="store_true", default=None)
    parser.add_argument("--keep-parts", action="store_true", default=None, help="keep attempts/ after a run is published")
    parser.add_argument("--task-runner", choices=[k.value for k in TaskRunnerKind])
    parser.add_argument("--max-workers", type=int)
    parser.add_argument("--dask-address")
    parser.add_argument("--dask-workers", type=int)
    parser.add_argument(
        "--gate", action="append", type=gate_pair, default=[], dest="gate_limits", metavar="NAME=VALUE",
        help="quality-gate limit (repeatable): min_landed_share, max_lost_share, max_failed_share[.<class>], "
        "max_unhealthy_share, max_unobserved_share, min_observed_share.<check>; a failing gate exits 3",
    )
    add_storage_options(parser)
    parser.add_argument("--aws-credentials-block", metavar="NAME", help="prefect-aws AwsCredentials block for S3 (default: the environment)")
