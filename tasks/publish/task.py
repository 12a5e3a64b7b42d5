"""Publishing a finished run: manifest.json, _SUCCESS last, LATEST; then the parts removed while Prefect records the artifacts.

``manifest.json`` (with ``report.html``) is the only output that carries the run id and times,
so every other output stays byte-identical across reruns of the same inputs and parameters.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict
from datetime import datetime
from typing import Any

from prefect import task
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.events import emit_event

from evidence import RecordedParams, RunCounts, RunIdentity, RunManifest, Streamed, dumps
from tasks.discover.scan import JobPlan
from tasks.publish.events import StageEvent
from tasks.publish.links import job_artifact_key, openable_url
from tasks.reduce.outputs import ReduceSummary
from tasks.rundir import REPORT_FILE, VIEWER_PAGE, RunPaths, mark_complete, update_latest
from tasks.storage import Location


def build_manifest(
    *, run: RunIdentity, params: RecordedParams, plan: JobPlan, reduced: ReduceSummary, timings: dict[str, float]
) -> RunManifest:
    """The run manifest (FORMATS.md, "manifest.json").

    Its two long lists, the input files and the attempts, are ``Streamed``: produced while
    ``publish_run`` writes them, read from the plan and from the reduce's attempt log.
    """
    log = reduced.log
    return RunManifest(
        run=run,
        parameters=params,
        inputs_fingerprint=plan.fingerprint,
        input_files=Streamed(lambda: ((name, asdict(entry)) for name, entry in plan.inputs), pairs=True),
        shards=[{**shard, "accounting": plan.accounting["shards"][shard["file"]]} for shard in plan.shards],
        accounting={k: v for k, v in plan.accounting.items() if k not in ("shards", "lost_keys")},
        counts=RunCounts(
            attempts=log.count,
            by_status=dict(sorted(log.by_status.items())),
            rows=reduced.rows,
            skipped_lines=len(plan.skipped),
            orphans=len(plan.orphans),
            repairs=log.repairs,
            atif_files=reduced.atif_files,
            atif_rejections=reduced.atif_rejections,
            verdicts=reduced.verdicts,
            fold_problems=len(reduced.fold_problems),
        ),
        attempts=Streamed(log.entries),
        skipped_lines=[{k: v for k, v in asdict(s).items() if k != "shard" or v is not None} for s in plan.skipped],
        orphans=plan.orphans,
        fold_problems=reduced.fold_problems,
        timings={k: round(v, 3) for k, v in timings.items()},
    )


def write_document(run_dir: Location, name: str, document: dict[str, Any]) -> None:
    """A run-level JSON output (``accounting.json``, ``gate.json``): 2-space indented, one trailing newline."""
    run_dir.child(name).write_bytes(dumps(document, indent=True) + b"\n")


@task(name="publish-run", cache_policy=NO_CACHE, persist_result=False)
def publish_run(run_dir: Location, job_dir: Location, manifest: RunManifest, report_html: str, full_scope: bool) -> None:
    """manifest.json, report.html, then _SUCCESS, then LATEST (full runs only; LATEST_FAILED_GATE when the gate failed)."""
    paths = RunPaths(run_dir)
    paths.manifest.write_chunks(manifest.json_chunks)
    paths.report.write_bytes(report_html.encode())
    mark_complete(run_dir)
    if full_scope:
        update_latest(job_dir, manifest.run.run_id, datetime.fromisoformat(manifest.run.finished_at), manifest.gate_passed)


@contextmanager
def parts_removed_meanwhile(run_dir: Location, keep_parts: bool) -> Iterator[None]:
    """A published run's parts removed on a thread of their own while the block runs; a failed removal raises after it.

    The per-attempt parts are what a resume of an unfinished run reuses; once ``_SUCCESS``
    exists nothing reads them (the manifest and the outputs hold all they carried), and they
    are the largest thing in a run and differ between identical runs (timings). Removing a
    2,000-rollout run's segments takes about 0.25 s, nearly all of it in the kernel, and
    recording the run's Prefect artifacts about as long, nearly all of it waiting for the
    server: side by side they cost one of the two.
    """
    if keep_parts:
        yield
        return
    with ThreadPoolExecutor(max_workers=1) as background:
        removal = background.submit(RunPaths(run_dir).attempts.remove_tree)
        try:
            yield
        except BaseException as error:
            failed = removal.exception()  # waits for the removal: the block's error goes on, with the removal's
            if failed is not None:
                error.add_note(f"removing the parts failed too: {failed}")
            raise
    removal.result()


def publish_artifacts(manifest: RunManifest, run_dir: Location, tables: dict[str, Any]) -> None:
    """Prefect artifacts: verdict table, perf markdown, capability table, links to the outputs."""
    run = f"run {manifest.run.run_id} of job {manifest.run.job_id}"
    job = manifest.run.job_id
    create_table_artifact(
        key=job_artifact_key("evidence-stage-verdicts", job),
        table=[{"verdict": k, "rollouts": v} for k, v in sorted(manifest.counts.verdicts.items())],
        description=f"Health verdict counts (main rollouts) of {run}.",
    )
    for key, (shows, table) in tables.items():
        description = f"{shows} of {run}."
        if isinstance(table, str):
            create_markdown_artifact(key=job_artifact_key(key, job), markdown=table, description=description)
        else:
            create_table_artifact(key=job_artifact_key(key, job), table=table, description=description)
    publish_folder(job_artifact_key("evidence-stage-run-dir", job), run_dir, "run directory", f"Where the outputs of {run} are.")
    publish_link(job_artifact_key("evidence-stage-report", job), RunPaths(run_dir).report, REPORT_FILE, f"The report of {run}.")
    if (viewer := run_dir.child(VIEWER_PAGE)).is_file():  # a run written before the viewer has none
        publish_link(job_artifact_key("evidence-stage-rollouts", job), viewer, "rollout viewer", f"The rollouts of {run}.")


def publish_link(key: str, location: Location, label: str, description: str) -> None:
    """A link artifact to ``location`` when a browser can open it, else its URL as text; always described."""
    url, note = openable_url(location)
    if url is None:
        create_markdown_artifact(key=key, markdown=f"{label}: `{location.url}`", description=f"{description} {note}")
    else:
        create_link_artifact(key=key, link=url, link_text=label, description=f"{description} {note}")


def publish_folder(key: str, folder: Location, label: str, description: str) -> None:
    """A folder (no single object to sign) as text: its URL, to copy into a client or a console."""
    create_markdown_artifact(key=key, markdown=f"{label}: `{folder.url}`", description=description)


def emit(event: StageEvent) -> None:
    """Send one of the run's events (``tasks.publish.events``) to the Prefect server."""
    emit_event(event.name, resource=event.resource, payload=event.payload)
