"""One MLflow run per stage run: params, metrics, artifacts, and its rollouts' traces.

The MLflow run is found again by the tag ``evidence_stage.run_key`` (``<job id>/<run id>``), so a
second export updates it: params are written with the same values, metrics carry the stage
run's finish time and step 0 (the store keeps one point per key, timestamp, step and value),
artifacts are overwritten, and traces keep their ids (MLflow upserts spans by id).
Traces go to the server's OTLP endpoint with the experiment and run headers, which links them
to the run.
"""

from __future__ import annotations

import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from evidence import MLFLOW_ARTIFACTS, RUN_KEY_TAG, RunRecord, run_metrics
from tasks.export.otlp import OtlpSender, TraceExport
from tasks.export.run_dir import ExportError, finished_manifest, require, run_documents, run_traces
from tasks.storage import Location

__all__ = ["ARTIFACTS", "DEFAULT_EXPERIMENT", "MlflowExport", "export_to_mlflow"]

DEFAULT_EXPERIMENT = "evidence-stage"
ARTIFACTS = tuple(output.name for output in MLFLOW_ARTIFACTS)  # evidence/outputs.py says which
EXPERIMENT_HEADER = "x-mlflow-experiment-id"
RUN_HEADER = "x-mlflow-run-id"
_BATCH = 1000  # MLflow's limit of metrics per log_batch


@dataclass
class MlflowExport:
    """Where the run landed and what was sent."""

    experiment_id: str
    run_id: str
    created: bool
    metrics: int
    artifacts: list[str]
    traces: TraceExport

    def run_url(self, tracking_uri: str) -> str:
        """The run's page in the MLflow UI."""
        return f"{tracking_uri.rstrip('/')}/#/experiments/{self.experiment_id}/runs/{self.run_id}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "experiment_id": self.experiment_id,
            "run_id": self.run_id,
            "created": self.created,
            "metrics": self.metrics,
            "artifacts": self.artifacts,
            "traces": self.traces.as_dict(),
        }


REACH_TIMEOUT_S = 10.0
"""How long the server gets to answer before an export starts: the MLflow client's own retries
took 4 minutes to give up on a server that was not there."""


def _check_tracking_uri(tracking_uri: str) -> None:
    if urlsplit(tracking_uri).scheme not in ("http", "https"):
        raise ExportError(f"--tracking-uri must be the http(s) URL of an MLflow server (traces go to its /v1/traces): {tracking_uri}")


def check_reachable(tracking_uri: str, timeout: float = REACH_TIMEOUT_S) -> None:
    """Raise ``ExportError`` when nothing answers at ``tracking_uri`` (any HTTP answer will do)."""
    try:
        urllib.request.urlopen(f"{tracking_uri.rstrip('/')}/health", timeout=timeout).close()  # http(s) only: checked above
    except urllib.error.HTTPError:
        return  # a server answered
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        text = getattr(reason, "strerror", None) or str(reason) or type(reason).__name__
        raise ExportError(f"the MLflow server at {tracking_uri} is not reachable: {text}") from exc


def _experiment_id(client: Any, name: str) -> str:
    experiment = client.get_experiment_by_name(name)
    return experiment.experiment_id if experiment is not None else client.create_experiment(name)


def _find_or_create_run(client: Any, experiment_id: str, record: RunRecord) -> tuple[str, bool]:
    found = client.search_runs([experiment_id], filter_string=f"tags.`{RUN_KEY_TAG}` = '{record.key}'", max_results=2)
    if len(found) > 1:
        raise ExportError(f"experiment {experiment_id} holds several runs tagged {RUN_KEY_TAG}={record.key}")
    if found:
        return found[0].info.run_id, False
    run = client.create_run(experiment_id, start_time=record.started_ms, tags=record.tags, run_name=record.key)
    return run.info.run_id, True


def _log_artifacts(client: Any, mlflow_run_id: str, run_dir: Location) -> list[str]:
    """Copy the run's small outputs to the MLflow run, keeping their relative paths."""
    logged = []
    with tempfile.TemporaryDirectory(prefix="evidence-stage-mlflow-") as staging:
        for name in ARTIFACTS:
            source = run_dir.child(*name.split("/"))
            if not source.exists():
                continue
            local = Path(staging, name)
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_bytes(source.read_bytes())
            client.log_artifact(mlflow_run_id, str(local), name.rpartition("/")[0] or None)
            logged.append(name)
    return logged


def export_to_mlflow(run_dir: Location, tracking_uri: str, experiment: str = DEFAULT_EXPERIMENT) -> MlflowExport:
    """Create or update the MLflow run of a finished stage run and send its traces."""
    _check_tracking_uri(tracking_uri)
    tracking = require("mlflow.tracking")
    entities = require("mlflow.entities")
    require("opentelemetry.exporter.otlp.proto.http.trace_exporter")  # before a run is created, not after
    check_reachable(tracking_uri)
    finished = finished_manifest(run_dir)
    record = RunRecord.from_finished(finished)
    client = tracking.MlflowClient(tracking_uri=tracking_uri)
    experiment_id = _experiment_id(client, experiment)
    mlflow_run_id, created = _find_or_create_run(client, experiment_id, record)
    metrics = [entities.Metric(name, value, record.finished_ms, 0) for name, value in run_metrics(run_documents(run_dir, finished)).items()]
    params = [entities.Param(name, value) for name, value in record.params.items()]
    tags = [entities.RunTag(name, value) for name, value in record.tags.items()]
    client.log_batch(mlflow_run_id, metrics=metrics[:_BATCH], params=params, tags=tags)
    for start in range(_BATCH, len(metrics), _BATCH):
        client.log_batch(mlflow_run_id, metrics=metrics[start : start + _BATCH])
    artifacts = _log_artifacts(client, mlflow_run_id, run_dir)
    sender = OtlpSender(tracking_uri, {EXPERIMENT_HEADER: experiment_id, RUN_HEADER: mlflow_run_id})
    traces = sender.send(run_traces(run_dir, finished))
    client.set_terminated(mlflow_run_id, "FINISHED", end_time=record.finished_ms)
    return MlflowExport(experiment_id, mlflow_run_id, created, len(metrics), artifacts, traces)
