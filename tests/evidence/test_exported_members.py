"""The public surface of ``evidence`` is deliberate: this list changes only on purpose."""

from __future__ import annotations

import ast
from pathlib import Path

import evidence

EXPECTED = {
    "AggregateMetricsFold",
    "AtifAcceptance",
    "GroupRefusal",
    "ScoreDigest",
    "build_scores",
    "dumps_aggregate_metrics",
    "score_digest",
    "AtifFile",
    "AtifRefusal",
    "AttemptConfig",
    "AttemptInputs",
    "AttemptOutcome",
    "AttemptPart",
    "FirstKeyWins",
    "MainDigests",
    "PART_VERSION",
    "PartError",
    "PerfDigest",
    "StageError",
    "PerfSummaryFold",
    "Status",
    "capture_file_id",
    "decode_part",
    "dumps",
    "encode_part",
    "perf_group",
    "process_attempt",
    "unprocessed_attempt",
    "AtifExportError",
    "BatchRules",
    "CAPTURE_SUFFIX",
    "MANIFEST_NAME",
    "ManifestHead",
    "RecordedParams",
    "RunCounts",
    "RunIdentity",
    "RunManifest",
    "Streamed",
    "MARKER_SUFFIX",
    "CaptureFiles",
    "CaptureLookup",
    "CollectedRow",
    "EvidenceError",
    "Exporter",
    "HealthFold",
    "ReportContext",
    "RowDigest",
    "RowRejected",
    "SUMMARY_NAME",
    "UnknownHealthCheck",
    "VERDICTS_NAME",
    "build_capabilities",
    "capabilities_markdown",
    "capability_digest",
    "capability_table_rows",
    "capture_rollout_id",
    "check_capture_file_id",
    "collect_row",
    "compute_perf_summary",
    "atif_of_line",
    "config_error_message",
    "dump_row",
    "duplicate_key_message",
    "evaluate_row",
    "export_rollouts",
    "health_check_bytes",
    "health_markdown",
    "histogram_values",
    "normalize_ignored_checks",
    "orjson_line",
    "parse_ignored_checks",
    "split_check_ids",
    "output_created_message",
    "output_exists_message",
    "perf_markdown",
    "read_capture",
    "render_report",
    "rollouts_not_found_message",
    "success_lines",
    "summary_input",
    "trajectory_identity",
    "verdict_line",
    "verdict_order",
    "Comparison",
    "RunEvidence",
    "compare_markdown",
    "compare_runs",
    "comparison_json",
    "render_compare",
    "rollout_facts",
    "verdict_facts",
    "RUN_KEY_TAG",
    "SERVICE_NAME",
    "RunDocuments",
    "RunRecord",
    "SpanModel",
    "TraceIdentity",
    "TraceModel",
    "TraceSkipped",
    "main_identities",
    "rollout_trace",
    "run_metrics",
    "ShardAccount",
    "accounted_fields",
    "accounting_markdown",
    "gate_markdown",
    "run_accounting",
    "evaluate_gate",
    "gate_reason",
    "MASKED_LISTED",
    "MaskedRollout",
    "key_metrics",
    "masked_rollout",
    "reward_values",
    "scores_markdown",
    "RolloutVerdicts",
    "EndReason",
    "LiveStatus",
    "Outstanding",
    "answered_accounting",
    "capture_activity",
    "end_of_job",
    "outstanding_rollouts",
    "unhealthy_share",
}


def test_all_is_pinned_and_importable() -> None:
    assert set(evidence.__all__) == EXPECTED
    assert len(evidence.__all__) == len(EXPECTED)
    for name in evidence.__all__:
        assert getattr(evidence, name) is not None


def test_evidence_never_imports_prefect_or_fsspec() -> None:
    """The pure core stays pure (ARCHITECTURE.md, rule 1): no orchestration or storage imports anywhere in it."""
    forbidden = {"prefect", "fsspec", "s3fs", "os", "pathlib"}
    for path in Path(evidence.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                assert name.split(".")[0] not in forbidden, f"{path.name} imports {name}"
