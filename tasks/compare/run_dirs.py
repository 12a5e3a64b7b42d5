"""Comparing two run directories: read each through the storage layer, compare, write.

Rows are streamed once per run and reduced to their facts as they are read (``evidence.compare``
keeps nothing else of them), so two large runs compare in little memory. The outputs go to
``--output``, by default ``<job dir of B>/compare/<run A>--<run B>/`` beside B's ``runs/``, so
the compared runs' own directories are never written.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from evidence import (
    Comparison,
    RunEvidence,
    compare_markdown,
    compare_runs,
    comparison_json,
    loads_line,
    render_compare,
    rollout_facts,
    verdict_facts,
)
from tasks.rundir import (
    COMPARE_JSON,
    COMPARE_MARKDOWN,
    COMPARE_PAGE,
    RUNS_FOLDER,
    RunPaths,
    finished_run,
    latest_manifest,
    read_document,
    run_dir_of,
)
from tasks.storage import InputNotFound, Location


@dataclass(frozen=True)
class CompareResult:
    """What a comparison wrote and its verdict, small enough to return from a task."""

    status: str
    trusted: bool
    changed: list[str]
    output: str
    markdown: str

    def summary(self) -> dict[str, Any]:
        """The verdict and where the files are (a flow's return value, a batch entry's ``compare``)."""
        return {"status": self.status, "trusted": self.trusted, "changed": self.changed, "output": self.output}


def _objects(location: Location) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL file (absent file: none), streamed.

    A line orjson refuses is one the stage wrote all the same (nested past orjson's 1,024 levels,
    or holding a lone surrogate from a capture): it is read as Python's ``json`` reads it, as the
    viewer shows it; a line no parser reads is no object.
    """
    if not location.exists():
        return
    for _, _, raw in location.iter_lines():
        if raw.strip():
            try:
                value = loads_line(raw)
            except ValueError:
                continue
            if isinstance(value, dict):
                yield value


def read_run(run_dir: Location) -> RunEvidence:
    """A finished run directory as the comparison's input (its ``manifest.json`` is required)."""
    paths = RunPaths(run_dir)
    manifest = paths.manifest
    if not manifest.exists():
        raise InputNotFound(manifest.url, "no manifest.json: not a finished run directory")
    return RunEvidence(
        location=run_dir.url,
        manifest=finished_run(run_dir),
        quality_summary=read_document(paths.quality_summary),
        perf_summary=read_document(paths.perf_summary),
        capabilities=read_document(paths.capabilities),
        gate=read_document(paths.gate),
        accounting=read_document(paths.accounting),
        rollouts=[rollout_facts(row) for row in _objects(paths.rollouts)],
        verdicts=[verdict_facts(line) for line in _objects(paths.verdicts)],
        atif_accepted=[f"{line.get('_ng_task_index')}-{line.get('_ng_rollout_index')}" for line in _objects(paths.atif_manifest)],
        atif_rejections=list(_objects(paths.atif_rejections)),
        scores=read_document(paths.scores),
    )


def default_output(run_a: Location, run_b: Location) -> Location:
    """``<job dir of B>/compare/<run A>--<run B>/`` for runs in the stage's layout, else beside B."""
    runs = run_b.parent()
    base = runs.parent() if runs.name == RUNS_FOLDER else runs
    return base.child("compare", f"{run_a.name}--{run_b.name}")


def write_comparison(comparison: Comparison, output: Location) -> str:
    """Write the three files; return the markdown (the flow run's artifact)."""
    markdown = compare_markdown(comparison)
    output.child(COMPARE_JSON).write_bytes(comparison_json(comparison))
    output.child(COMPARE_MARKDOWN).write_bytes(markdown.encode())
    output.child(COMPARE_PAGE).write_bytes(render_compare(comparison).encode())
    return markdown


def compare_run_dirs(run_a: Location, run_b: Location, output: Location | None = None, *, seed: int = 0) -> CompareResult:
    """Read both runs, compare B against A, write ``compare.json``/``.md``/``.html``."""
    target = output or default_output(run_a, run_b)
    comparison = compare_runs(read_run(run_a), read_run(run_b), seed=seed)
    markdown = write_comparison(comparison, target)
    return CompareResult(comparison.status, comparison.trust.trusted, comparison.changed, target.url, markdown)


def previous_complete_run(output: Location, job_id: str) -> Location | None:
    """The job's ``LATEST`` complete run directory (None when it has none): what a new run of
    the job is compared with."""
    manifest = latest_manifest(output, job_id)
    return None if manifest is None else run_dir_of(output, job_id, manifest.run.run_id)
