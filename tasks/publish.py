"""Publishing a finished run: manifest.json, _SUCCESS last, LATEST, Prefect artifacts.

``manifest.json`` (with ``report.html``) is the only output that carries the run id and times,
so every other output stays byte-identical across reruns of the same inputs and parameters.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import orjson
from prefect import task
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from tasks.discover import JobPlan
from tasks.reduce import ReduceSummary
from tasks.runs import mark_complete, update_latest
from tasks.storage import Location


def build_manifest(
    *,
    run: dict[str, Any],
    params: dict[str, Any],
    config_fingerprint: str,
    plan: JobPlan,
    statuses: dict[str, dict[str, Any]],
    reduced: ReduceSummary,
    timings: dict[str, float],
) -> dict[str, Any]:
    """The run manifest (documented in the README, section "manifest.json")."""
    counts: dict[str, int] = {}
    for status in statuses.values():
        counts[status["status"]] = counts.get(status["status"], 0) + 1
    repeated = _repeated_rollout_ids(statuses)
    return {
        "run": run,
        "parameters": params,
        "config_fingerprint": config_fingerprint,
        "inputs": {
            "fingerprint": plan.fingerprint,
            "files": {name: asdict(entry) for name, entry in sorted(plan.inputs.items())},
        },
        "counts": {
            "attempts": len(statuses),
            "by_status": dict(sorted(counts.items())),
            "rows": reduced.rows,
            "skipped_lines": len(plan.skipped),
            "orphans": len(plan.orphans),
            "repairs": sum(1 for s in statuses.values() if s.get("repaired")),
            "atif_files": reduced.atif_files,
            "atif_rejections": reduced.atif_rejections,
            "verdicts": reduced.verdicts,
        },
        "attempts": [
            _attempt_entry(a.key, a.line, a.source, a.fingerprint, statuses[a.key], repeated)
            for a in plan.attempts
            if a.key in statuses
        ],
        "skipped_lines": [asdict(s) for s in plan.skipped],
        "orphans": plan.orphans,
        "timings": {k: round(v, 3) for k, v in timings.items()},
    }


def _repeated_rollout_ids(statuses: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Rollout ids claimed by more than one attempt (duplicate identities), with their counts."""
    seen: dict[str, int] = {}
    for status in statuses.values():
        if status.get("rollout_id") is not None:
            seen[status["rollout_id"]] = seen.get(status["rollout_id"], 0) + 1
    return {rollout_id: n for rollout_id, n in seen.items() if n > 1}


def _attempt_entry(
    key: str, line: int, source: str, fingerprint: str, status: dict[str, Any], repeated: dict[str, int]
) -> dict[str, Any]:
    entry = {"key": key, "line": line, "source": source, "fingerprint": fingerprint, **status}
    count = repeated.get(status.get("rollout_id"))  # type: ignore[arg-type]
    if count:
        entry["notes"] = [*entry.get("notes", []), f"duplicate rollout id: {count} attempts share it"]
    return entry


@task(name="publish-run", cache_policy=NO_CACHE, persist_result=False)
def publish_run(run_dir: Location, job_dir: Location, manifest: dict[str, Any], report_html: str, full_scope: bool) -> None:
    """manifest.json and report.html, then _SUCCESS, then LATEST (full runs only)."""
    run_dir.child("manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n")
    run_dir.child("report.html").write_bytes(report_html.encode())
    mark_complete(run_dir)
    if full_scope:
        update_latest(job_dir, manifest["run"]["run_id"])


def publish_artifacts(manifest: dict[str, Any], run_dir: Location, tables: dict[str, Any]) -> None:
    """Prefect artifacts: verdict table, perf markdown, capability table, links to the outputs."""
    counts = manifest["counts"]
    create_table_artifact(
        key="evidence-stage-verdicts",
        table=[{"verdict": k, "rollouts": v} for k, v in sorted(counts["verdicts"].items())],
        description="Health verdict counts (main rollouts)",
    )
    for key, table in tables.items():
        if isinstance(table, str):
            create_markdown_artifact(key=key, markdown=table)
        else:
            create_table_artifact(key=key, table=table)
    create_link_artifact(key="evidence-stage-run-dir", link=run_dir.url, link_text="run directory")
    create_link_artifact(key="evidence-stage-report", link=run_dir.child("report.html").url, link_text="report.html")
