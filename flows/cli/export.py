"""``evidence-stage export mlflow|otel RUN_DIR_URL``: a finished run into a tracking store.

Runs the export tasks directly (no Prefect server needed); the deployed flows in
``flows/export.py`` call the same tasks. Prints what was sent as one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
from typing import Any

import orjson

from flows.cli.options import add_model_options, model_from_args
from flows.params.export import MlflowExportParams, OtelExportParams


def register(subcommands: Any) -> None:
    parser = subcommands.add_parser("export", help="export a finished run directory to MLflow or an OpenTelemetry collector")
    targets = parser.add_subparsers(dest="target", required=True, metavar="{mlflow,otel}", title="targets")
    mlflow = targets.add_parser(
        "mlflow",
        help="one MLflow run per stage run: params, metrics, artifacts, traces",
        description="One MLflow run per stage run: params, metrics, artifacts, traces; prints what was sent as one JSON line.",
    )
    add_model_options(mlflow, MlflowExportParams)
    mlflow.set_defaults(handler=handle_mlflow)
    otel = targets.add_parser(
        "otel",
        help="one OpenTelemetry trace per main row, over OTLP/HTTP",
        description="One OpenTelemetry trace per main row, over OTLP/HTTP; prints what was sent as one JSON line.",
    )
    add_model_options(otel, OtelExportParams)
    otel.set_defaults(handler=handle_otel)


MLFLOW_RETRIES = "3"
"""Retries of an MLflow request (``MLFLOW_HTTP_REQUEST_MAX_RETRIES``, kept when set): MLflow's 7
with exponential backoff took 4 minutes to fail on a server that stopped answering."""


def handle_mlflow(args: argparse.Namespace) -> int:
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", MLFLOW_RETRIES)  # read when MLflow makes its first request
    from flows.execution.credentials import storage_options_with
    from tasks.export import export_to_mlflow  # MLflow only when exporting
    from tasks.storage import Location

    params = model_from_args(MlflowExportParams, args)
    run_dir = Location(args.run_dir, storage_options_with(params))  # as given, as compare takes its runs
    with contextlib.redirect_stdout(io.StringIO()):  # MLflow prints "View run at ..." lines: stdout is the one JSON line
        result = export_to_mlflow(run_dir, params.tracking_uri, params.experiment)
    print(orjson.dumps({**result.as_dict(), "url": result.run_url(params.tracking_uri)}).decode())
    return 0


def handle_otel(args: argparse.Namespace) -> int:
    from flows.execution.credentials import storage_options_with
    from tasks.export import export_to_otel  # OpenTelemetry only when exporting
    from tasks.storage import Location

    params = model_from_args(OtelExportParams, args)
    result = export_to_otel(Location(args.run_dir, storage_options_with(params)), params.endpoint, params.headers)
    print(orjson.dumps(result.as_dict()).decode())
    return 0
