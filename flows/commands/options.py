"""Options shared by several subcommands."""

from __future__ import annotations

import argparse
from typing import Any

import orjson

from flows.params import TaskRunnerKind


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
    add_storage_options(parser)
    parser.add_argument("--aws-credentials-block", metavar="NAME", help="prefect-aws AwsCredentials block for S3 (default: the environment)")
