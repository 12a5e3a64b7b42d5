"""Reading what the exporters send from a finished run directory (any fsspec URL).

A run directory is finished when its ``_SUCCESS`` exists; before that its files may still change,
so exporting refuses it.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

from evidence import (
    FinishedRun,
    RolloutVerdicts,
    RunDocuments,
    RunRecord,
    StageError,
    TraceModel,
    TraceSkipped,
    loads_line,
    main_identities,
    rollout_trace,
)
from tasks.rundir import RunPaths, finished_run, is_complete, read_document, run_attempts
from tasks.storage import InputNotFound, Location

__all__ = ["ExportError", "ExtraMissing", "finished_manifest", "require", "run_documents", "run_traces", "run_verdicts"]

EXTRA = "evidence-stage[export]"


class ExportError(StageError, RuntimeError):
    """An export that cannot go on (a collector refused, the run directory disagrees with itself)."""


class ExtraMissing(ExportError):
    """An optional client library of the ``export`` extra is not installed."""

    def __init__(self, module: str) -> None:
        super().__init__(f"exporting needs {module}, which is not installed: install {EXTRA}")


def require(module: str) -> Any:
    """Import an optional client module, or say in one line which extra brings it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ExtraMissing(module.split(".", maxsplit=1)[0]) from exc


def finished_manifest(run_dir: Location) -> FinishedRun:
    """The run's manifest; a run directory without ``_SUCCESS`` is not finished and is refused."""
    if not is_complete(run_dir):
        raise InputNotFound(RunPaths(run_dir).success.url, "no _SUCCESS: not a finished run directory")
    return finished_run(run_dir)


def run_documents(run_dir: Location, finished: FinishedRun) -> RunDocuments:
    """The small files the metrics come from (the optional ones are None when absent)."""
    paths = RunPaths(run_dir)
    return RunDocuments(
        counts=finished.counts,
        quality_summary=read_document(paths.quality_summary),
        perf_summary=read_document(paths.perf_summary),
        accounting=read_document(paths.accounting),
        gate=read_document(paths.gate),
        scores=read_document(paths.scores),
    )


def run_verdicts(run_dir: Location) -> RolloutVerdicts:
    """The run's verdict lines, to hand each row its own (none when the run has no health report)."""
    verdicts = RunPaths(run_dir).verdicts
    lines = (loads_line(raw) for _, _, raw in verdicts.iter_lines() if raw.strip()) if verdicts.exists() else ()
    return RolloutVerdicts(line for line in lines if isinstance(line, dict))


def run_traces(run_dir: Location, finished: FinishedRun) -> Iterator[TraceModel | TraceSkipped]:
    """One trace (or the reason there is none) per line of ``rollouts.jsonl``, streamed, with the
    row's reward and health verdict as evaluation events."""
    identities = iter(main_identities(RunRecord.from_finished(finished), run_attempts(run_dir)))
    verdicts = run_verdicts(run_dir)
    for line_no, _, raw in RunPaths(run_dir).rollouts.iter_lines():
        if not raw.strip():
            continue
        identity = next(identities, None)
        if identity is None:
            raise ExportError(f"rollouts.jsonl line {line_no} has no main attempt in manifest.json")
        row = loads_line(raw)  # a line deeper than orjson reads (a row of the run, issue 45)
        yield rollout_trace(row, identity, verdicts.take(row, line_no - 1))
