"""Gathering a run's report: read its small outputs, render ``report.html`` and artifact tables.

Used at the end of a run (histogram values come from the reduce) and by ``evidence-stage
report RUN_DIR`` (which recomputes them by streaming the run's rollouts once).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import orjson

from evidence import (
    MASKED_LISTED,
    REPORT_LINKS,
    FinishedRun,
    MaskedRollout,
    RecordedParams,
    ReportContext,
    accounting_markdown,
    capabilities_markdown,
    capability_digest,
    capability_table_rows,
    deep_retry,
    gate_markdown,
    health_markdown,
    histogram_values,
    loads_line,
    masked_rollout,
    perf_markdown,
    render_report,
    reward_values,
    score_digest,
    scores_markdown,
)
from tasks.rundir import (
    ACCOUNTING_FILE,
    CAPABILITIES_FILE,
    GATE_FILE,
    MANIFEST_FILE,
    PERF_SUMMARY_FILE,
    QUALITY_SUMMARY_FILE,
    SCORES_FILE,
    VERDICTS_FILE,
    VIEWER_PAGE,
    RunPaths,
    read_document,
)
from tasks.storage import Location
from tasks.storage.concurrent import at_once

LINKS = tuple((str(output.link), output.name) for output in REPORT_LINKS)  # (label, name), from evidence/outputs.py


DOCUMENTS = (SCORES_FILE, QUALITY_SUMMARY_FILE, CAPABILITIES_FILE, PERF_SUMMARY_FILE, ACCOUNTING_FILE, GATE_FILE)
T = TypeVar("T")


def _read_outputs(run_dir: Location) -> tuple[set[str], dict[str, Any]]:
    """Which linked outputs exist, and the documents the page shows (None when absent).

    Asked for all at once: on object storage each is a request with its own first-byte wait,
    and one after another they were most of the report's time (0.9 s at 30 ms a request).
    """
    others = [name for _, name in LINKS if name not in DOCUMENTS]  # a document read is its own existence check
    calls: list[Callable[[], Any]] = [run_dir.child(name).is_file for name in others]
    calls += [functools.partial(read_document, run_dir.child(name)) for name in DOCUMENTS]
    found = at_once(calls, remote=not run_dir.is_local)
    present = {name for name, there in zip(others, found[: len(others)], strict=True) if there}
    documents = dict(zip(DOCUMENTS, found[len(others) :], strict=True))
    return present | {name for name, document in documents.items() if document is not None}, documents


def masked_rollouts(run_dir: Location, verdicts: tuple[str, ...]) -> list[MaskedRollout]:
    """The first ``MASKED_LISTED`` verdict lines whose verdict the clean scores mask (the file is read no further)."""
    found: list[MaskedRollout] = []
    location = RunPaths(run_dir).verdicts
    if not verdicts:
        return found
    for _, _, raw in location.iter_lines():
        line = orjson.loads(raw) if raw.strip() else None
        if isinstance(line, dict) and line.get("verdict") in verdicts:
            found.append(masked_rollout(line))
            if len(found) == MASKED_LISTED:
                break
    return found


def report_context(
    run_dir: Location, finished: FinishedRun, histograms: dict[str, list[float]], live: dict[str, Any] | None = None
) -> ReportContext:
    """Everything the page shows, from the run's files and its manifest (and ``live.json``'s document, in a followed job's snapshot)."""
    run, params = finished.run, finished.parameters
    inputs = {"rollouts": str(params.rollouts), "capture dir": params.capture_dir, **sidecars_found(finished)}
    masked_verdicts = params.masked_verdicts
    present, documents = _read_outputs(run_dir)
    present.add(MANIFEST_FILE)
    return ReportContext(
        job_id=run.job_id,
        run_id=run.run_id,
        started_at=run.started_at,
        finished_at=run.finished_at,
        inputs=inputs,
        parameters=params.to_json(),
        quality_summary=documents[QUALITY_SUMMARY_FILE],
        capabilities=documents[CAPABILITIES_FILE] or {},
        perf_summary=documents[PERF_SUMMARY_FILE],
        latency_ms=histograms.get("latency_ms", []),
        tokens_per_turn=histograms.get("tokens_per_turn", []),
        links=[(label, name) for label, name in LINKS if name in present],
        accounting=documents[ACCOUNTING_FILE],
        gate=documents[GATE_FILE],
        scores=documents[SCORES_FILE],
        masked_verdicts=masked_verdicts,
        masked_rollouts=masked_rollouts(run_dir, masked_verdicts) if VERDICTS_FILE in present else [],
        rewards=histograms.get("reward", []),
        scope=scope_text(run.scope, params),
        viewer=VIEWER_PAGE if VIEWER_PAGE in present else None,
        live=live,
    )


def sidecars_found(finished: FinishedRun) -> dict[str, str]:
    """Each shard's sidecars as the run read them: the ``failures`` parameter, or the ones found beside the rollouts."""
    shards = finished.shards
    given = finished.parameters.failures
    found: dict[str, str] = {}
    for shard in shards:
        of = f" of {shard.file}" if len(shards) > 1 else ""
        if shard.failures:
            found[f"failures{of}" if given else f"failures{of} (found beside the rollouts)"] = shard.failures
        if shard.materialized_inputs:
            found[f"materialized inputs{of}"] = shard.materialized_inputs
    return found


def scope_text(scope: str, params: RecordedParams) -> str:
    """``full``, or a subset with what it selected."""
    if scope != "subset":
        return scope
    chosen = ([f"rollout ids {', '.join(params.rollout_ids)}"] if params.rollout_ids else []) + (
        [f"rollout ids matching {params.rollout_glob}"] if params.rollout_glob else []
    )
    return f"subset: {' or '.join(chosen)} (a rerun of part of the job; it never moves LATEST)"


def artifact_tables(context: ReportContext) -> dict[str, Any]:
    """Prefect artifacts (key -> (what it shows, markdown text or table rows)) mirroring the report's tables."""
    gate = (
        {"evidence-stage-gate": ("Quality gate: each limit with its measured value", gate_markdown(context.gate))}
        if context.gate is not None
        else {}
    )
    scores = scores_markdown(context.scores, context.masked_rollouts, context.masked_verdicts, context.quality_summary)
    return {
        "evidence-stage-scores": ("Scores: raw against clean per group and key metric, the masked rollouts (scores.json)", scores),
        **gate,
        "evidence-stage-accounting": (
            "Expected, landed, failed and lost rollouts per shard (accounting.json)",
            accounting_markdown(context.accounting),
        ),
        "evidence-stage-health": ("Health check summary (0.7.0's quality summary)", health_markdown(context.quality_summary)),
        "evidence-stage-perf-summary": ("Latency and token figures per group (perf_summary.json)", perf_markdown(context.perf_summary)),
        "evidence-stage-capabilities": (
            "Capability matrix: one row per agent, one column per capability",
            capability_table_rows(context.capabilities),
        ),
        "evidence-stage-capabilities-md": ("Capability matrix as text", capabilities_markdown(context.capabilities)),
    }


def render_run_report(
    run_dir: Location, finished: FinishedRun, histograms: dict[str, list[float]], live: dict[str, Any] | None = None
) -> tuple[str, dict[str, Any], list[str]]:
    """``report.html`` text, the artifact tables and the names of the linked outputs the run has."""
    context = report_context(run_dir, finished, histograms, live)
    return render_report(context), artifact_tables(context), [name for _, name in context.links]


def rebuild_histograms(run_dir: Location) -> dict[str, list[float]]:
    """Histogram values recomputed from the run's enriched main rows (for ``report``), rewards as the reduce takes them.

    Every line is read, also one orjson refuses (a lone surrogate, 1,024+ levels), and its digests
    are made with room for values nested past the default recursion limit; a digest that still
    raises is left out, as the attempt engine leaves out a digest it could not make.
    """
    rewards: list[float] = []

    def digests() -> Iterator[dict[str, Any]]:
        for _, _, raw in RunPaths(run_dir).rollouts.iter_lines():
            if raw.strip():
                row = loads_line(raw)
                score = _digest(score_digest, row)
                rewards.extend(reward_values([score] if score is not None else []))
                capability = _digest(capability_digest, row)
                if capability is not None:
                    yield capability

    return {**histogram_values(digests()), "reward": rewards}


def _digest(make: Callable[[dict[str, Any]], T], row: dict[str, Any]) -> T | None:
    try:
        return deep_retry(lambda: make(row))
    except Exception:  # noqa: BLE001 - the engine made no such digest either (evidence.process_attempt's guard)
        return None
