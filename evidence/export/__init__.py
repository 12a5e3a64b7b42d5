"""Exporting a finished run to tracking stores: the pure mapping (spans, metrics, identities).

``tasks/export`` puts these on the wire (OTLP/HTTP, MLflow's client); nothing here does I/O.
"""

from evidence.export.evaluations import EVALUATION_EVENT, EventModel, RolloutVerdict, RolloutVerdicts
from evidence.export.ids import TraceIdentity
from evidence.export.metrics import RunDocuments, run_metrics
from evidence.export.run import RUN_KEY_TAG, RunRecord, main_identities
from evidence.export.spans import SERVICE_NAME, SpanModel, TraceModel, TraceSkipped, rollout_trace

__all__ = [
    "EVALUATION_EVENT",
    "RUN_KEY_TAG",
    "SERVICE_NAME",
    "EventModel",
    "RolloutVerdict",
    "RolloutVerdicts",
    "RunDocuments",
    "RunRecord",
    "SpanModel",
    "TraceIdentity",
    "TraceModel",
    "TraceSkipped",
    "main_identities",
    "rollout_trace",
    "run_metrics",
]
