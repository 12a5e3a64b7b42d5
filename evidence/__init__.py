"""evidence: the pure domain library of evidence-stage.

Bytes, dicts and Pydantic models in; models and dicts out. No Prefect, no fsspec, no clock,
no environment reads. Every NeMo Gym 0.7.0 contract the stage implements lives here:
collection (``collect_row``: capture, join, ``ng_trajectory``, ``ng_perf``), health checks,
``perf_summary``, the strict ATIF v1.7 export, and the measured capability matrix and report.
Callers import from ``evidence``; the public surface below is pinned by a test.
"""

from evidence.atif import (
    FirstKeyWins,
    config_error_message,
    convert_orjson_row,
    convert_rollout,
    duplicate_key_message,
    export_rollouts,
    output_created_message,
    output_exists_message,
    rejected_rows_message,
    rollouts_not_found_message,
    success_lines,
)
from evidence.attempt import (
    AtifFile,
    AtifRefusal,
    AttemptConfig,
    AttemptOutcome,
    AttemptPart,
    MainDigests,
    PartError,
    PerfDigest,
    Status,
    decode_part,
    encode_part,
    process_attempt,
    unprocessed_attempt,
)
from evidence.capabilities import build_capabilities, capability_digest, histogram_values
from evidence.capture import CaptureFiles, CaptureLookup, read_capture
from evidence.collect import CollectedRow, collect_row
from evidence.errors import AtifExportError, EvidenceError, RowRejected
from evidence.health import (
    SUMMARY_NAME,
    VERDICTS_NAME,
    HealthFold,
    RowDigest,
    UnknownHealthCheck,
    evaluate_row,
    health_check_bytes,
    normalize_ignored_checks,
    verdict_line,
    verdict_order,
)
from evidence.identity import capture_file_id, capture_rollout_id, check_capture_file_id, trajectory_identity
from evidence.jsonl import dump_row, dumps, orjson_line
from evidence.models.atif import AtifRollout, Exporter
from evidence.perf_summary import PerfSummaryFold, compute_perf_summary, perf_group, summary_input
from evidence.report import (
    ReportContext,
    capabilities_markdown,
    capability_table_rows,
    health_markdown,
    perf_markdown,
    render_report,
)

__all__ = [
    "AtifExportError",
    "AtifFile",
    "AtifRefusal",
    "AtifRollout",
    "AttemptConfig",
    "AttemptOutcome",
    "AttemptPart",
    "CaptureFiles",
    "CaptureLookup",
    "CollectedRow",
    "EvidenceError",
    "Exporter",
    "FirstKeyWins",
    "HealthFold",
    "MainDigests",
    "PartError",
    "PerfDigest",
    "PerfSummaryFold",
    "ReportContext",
    "RowDigest",
    "RowRejected",
    "SUMMARY_NAME",
    "Status",
    "UnknownHealthCheck",
    "VERDICTS_NAME",
    "build_capabilities",
    "capabilities_markdown",
    "capability_digest",
    "capability_table_rows",
    "capture_file_id",
    "capture_rollout_id",
    "check_capture_file_id",
    "collect_row",
    "compute_perf_summary",
    "config_error_message",
    "convert_orjson_row",
    "convert_rollout",
    "decode_part",
    "dump_row",
    "dumps",
    "duplicate_key_message",
    "encode_part",
    "evaluate_row",
    "export_rollouts",
    "health_check_bytes",
    "health_markdown",
    "histogram_values",
    "normalize_ignored_checks",
    "orjson_line",
    "output_created_message",
    "output_exists_message",
    "perf_group",
    "perf_markdown",
    "process_attempt",
    "read_capture",
    "rejected_rows_message",
    "render_report",
    "rollouts_not_found_message",
    "success_lines",
    "summary_input",
    "trajectory_identity",
    "unprocessed_attempt",
    "verdict_line",
    "verdict_order",
]
