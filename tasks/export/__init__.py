"""Putting a finished run on the wire: OTLP/HTTP traces and an MLflow run.

The mapping (spans, metric names, ids) is ``evidence.export``; these modules read the run
directory, hold the optional clients (``evidence-stage[export]``) and send; ``task.py``
makes them tasks of the export flows (the CLI calls them as plain functions).
"""

from tasks.export.mlflow import MlflowExport, export_to_mlflow
from tasks.export.otlp import TraceExport, export_to_otel
from tasks.export.run_dir import ExportError, ExtraMissing

__all__ = ["ExportError", "ExtraMissing", "MlflowExport", "TraceExport", "export_to_mlflow", "export_to_otel"]
