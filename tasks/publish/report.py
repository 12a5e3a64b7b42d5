"""Gathering a run's report: read its small outputs, render ``report.html`` and artifact tables.

Used at the end of a run (histogram values come from the reduce) and by ``evidence-stage
report RUN_DIR`` (which recomputes them by streaming the run's rollouts once).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson

from evidence import (
    ReportContext,
    accounting_markdown,
    capabilities_markdown,
    capability_digest,
    capability_table_rows,
    gate_markdown,
    health_markdown,
    histogram_values,
    perf_markdown,
    render_report,
)
from tasks.rundir import (
    ACCOUNTING_FILE,
    ATIF_MANIFEST_FILE,
    ATIF_REJECTIONS_FILE,
    CAPABILITIES_FILE,
    FAILURES_FILE,
    GATE_FILE,
    MANIFEST_FILE,
    PERF_SUMMARY_FILE,
    QUALITY_SUMMARY_FILE,
    ROLLOUTS_FILE,
    VERDICTS_FILE,
    RunPaths,
    read_document,
)
from tasks.storage import Location

LINKS = (
    ("quality gate", GATE_FILE),
    ("run accounting", ACCOUNTING_FILE),
    ("enriched rollouts", ROLLOUTS_FILE),
    ("enriched failed attempts", FAILURES_FILE),
    ("health summary", QUALITY_SUMMARY_FILE),
    ("rollout verdicts", VERDICTS_FILE),
    ("perf summary", PERF_SUMMARY_FILE),
    ("capability matrix", CAPABILITIES_FILE),
    ("ATIF manifest", ATIF_MANIFEST_FILE),
    ("ATIF rejections", ATIF_REJECTIONS_FILE),
    ("run manifest", MANIFEST_FILE),
)


DOCUMENTS = (QUALITY_SUMMARY_FILE, CAPABILITIES_FILE, PERF_SUMMARY_FILE, ACCOUNTING_FILE, GATE_FILE)


def _read_outputs(run_dir: Location) -> tuple[set[str], dict[str, Any]]:
    """Which linked outputs exist, and the documents the page shows (None when absent).

    Asked for all at once: on object storage each is a request with its own first-byte wait,
    and one after another they were most of the report's time (0.9 s at 30 ms a request).
    """
    others = [name for _, name in LINKS if name not in DOCUMENTS]  # a document read is its own existence check
    with ThreadPoolExecutor(max_workers=len(others) + len(DOCUMENTS)) as pool:
        exists = pool.map(lambda name: run_dir.child(name).is_file(), others)
        documents = dict(zip(DOCUMENTS, pool.map(lambda name: read_document(run_dir.child(name)), DOCUMENTS)))
        present = {name for name, there in zip(others, exists) if there}
    return present | {name for name, document in documents.items() if document is not None}, documents


def report_context(run_dir: Location, manifest: dict[str, Any], histograms: dict[str, list[float]]) -> ReportContext:
    """Everything the page shows, from the run's files and its manifest."""
    run, params = manifest["run"], manifest["parameters"]
    inputs = {"rollouts": params["rollouts"], "capture dir": params["capture_dir"]}
    if params.get("failures"):
        inputs["failures"] = params["failures"]
    present, documents = _read_outputs(run_dir)
    present.add(MANIFEST_FILE)
    return ReportContext(
        job_id=run["job_id"],
        run_id=run["run_id"],
        started_at=run["started_at"],
        finished_at=run["finished_at"],
        inputs=inputs,
        parameters=params,
        quality_summary=documents[QUALITY_SUMMARY_FILE],
        capabilities=documents[CAPABILITIES_FILE] or {},
        perf_summary=documents[PERF_SUMMARY_FILE],
        latency_ms=histograms.get("latency_ms", []),
        tokens_per_turn=histograms.get("tokens_per_turn", []),
        links=[(label, name) for label, name in LINKS if name in present],
        accounting=documents[ACCOUNTING_FILE],
        gate=documents[GATE_FILE],
    )


def artifact_tables(context: ReportContext) -> dict[str, Any]:
    """Prefect artifacts (key -> (what it shows, markdown text or table rows)) mirroring the report's tables."""
    gate = {"evidence-stage-gate": ("Quality gate: each limit with its measured value", gate_markdown(context.gate))} if context.gate is not None else {}
    return {
        **gate,
        "evidence-stage-accounting": ("Expected, landed, failed and lost rollouts per shard (accounting.json)", accounting_markdown(context.accounting)),
        "evidence-stage-health": ("Health check summary (0.7.0's quality summary)", health_markdown(context.quality_summary)),
        "evidence-stage-perf-summary": ("Latency and token figures per group (perf_summary.json)", perf_markdown(context.perf_summary)),
        "evidence-stage-capabilities": ("Capability matrix, one row per capability", capability_table_rows(context.capabilities)),
        "evidence-stage-capabilities-md": ("Capability matrix as text", capabilities_markdown(context.capabilities)),
    }


def render_run_report(
    run_dir: Location, manifest: dict[str, Any], histograms: dict[str, list[float]]
) -> tuple[str, dict[str, Any], list[str]]:
    """``report.html`` text, the artifact tables and the names of the linked outputs the run has."""
    context = report_context(run_dir, manifest, histograms)
    return render_report(context), artifact_tables(context), [name for _, name in context.links]


def rebuild_histograms(run_dir: Location) -> dict[str, list[float]]:
    """Histogram values recomputed from the run's enriched main rows (for ``report``)."""
    digests = (capability_digest(orjson.loads(raw)) for _, _, raw in RunPaths(run_dir).rollouts.iter_lines() if raw.strip())
    return histogram_values(digests)
