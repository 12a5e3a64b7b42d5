"""What a run directory holds: one entry per output, and every fact about it that code or docs need.

Each output is said once here: its name in the run directory, its content type, what it
means (the README's output table is generated from this table and checked by a test), its
label in ``report.html``'s list of outputs, and whether ``tables`` or ``compare`` read it; two
ordered views of the table give the report's links and what ``export mlflow`` copies.
``tasks/rundir.py`` takes its file names from here, the report its links, the MLflow exporter
its artifacts and ``tables`` the outputs it requires. Adding a per-run output is: its fold,
one entry here (and in ``RUN_OUTPUTS``), its ``RunPaths`` property if code opens it, and its
line in FORMATS.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from evidence.atif.batch import MANIFEST_NAME
from evidence.health.dropin import SUMMARY_NAME, VERDICTS_NAME

__all__ = ["MLFLOW_ARTIFACTS", "REPORT_LINKS", "RUN_OUTPUTS", "RunOutput", "outputs_markdown"]


@dataclass(frozen=True, slots=True)
class RunOutput:
    """One output of a run directory.

    Attributes:
        name: its path in the run directory (a folder's ends with ``/``).
        content_type: its media type (``inode/directory`` for a folder).
        meaning: what it holds, one line of markdown (the README's table).
        link: its label in ``report.html``'s list of outputs; None when the report does not link it.
        tables: ``tables`` refuses a run without it.
        compare: ``compare`` reads it.
    """

    name: str
    content_type: str
    meaning: str
    link: str | None = None
    tables: bool = False
    compare: bool = False


_JSON, _JSONL = "application/json", "application/x-ndjson"
_FOLDER = "inode/directory"

ROLLOUTS = RunOutput("rollouts.jsonl", _JSONL, "the enriched main rows, in input order", "enriched rollouts", tables=True, compare=True)
FAILURES = RunOutput("rollouts_failures.jsonl", _JSONL, "the enriched sidecar rows, when the job has a sidecar", "enriched failed attempts")
QUALITY_SUMMARY = RunOutput(
    f"health/{SUMMARY_NAME}", _JSON, "0.7.0's health summary over the enriched main rows", "health summary", compare=True
)
VERDICTS = RunOutput(
    f"health/{VERDICTS_NAME}", _JSONL, "0.7.0's verdict per enriched main row", "rollout verdicts", tables=True, compare=True
)
PERF_SUMMARY = RunOutput("perf_summary.json", _JSON, "0.7.0's `perf_summary`, for the run and per group", "perf summary", compare=True)
AGGREGATE_METRICS = RunOutput(
    "aggregate_metrics.json",
    _JSON,
    "0.7.0's aggregate metrics per environment-server group, byte-equal to 0.7.0's [scores](FORMATS.md#scores-raw-and-clean)",
    "aggregate metrics",
)
AGGREGATE_METRICS_CLEAN = RunOutput(
    "aggregate_metrics_clean.json",
    _JSON,
    "the same with the rollouts of masked health verdicts left out (`--score-mask`, default `unhealthy`)",
    "aggregate metrics, masked rollouts left out",
)
SCORES = RunOutput(
    "scores.json",
    _JSON,
    "raw against clean per group and key metric (`mean/reward`, ...), with 0.7.0's 95 % intervals",
    "scores, raw against clean",
    compare=True,
)
ATIF_MANIFEST = RunOutput(f"atif/{MANIFEST_NAME}", _JSONL, "0.7.0's manifest of the ATIF files, input order", "ATIF manifest", compare=True)
ATIF_REJECTIONS = RunOutput(
    "atif/rejections.jsonl", _JSONL, "the main rows refused an ATIF file, and why", "ATIF rejections", tables=True, compare=True
)
ATIF_ERROR = RunOutput("atif/error.txt", "text/plain", "0.7.0's batch error, only when an `--atif-all-or-nothing` export failed")
ATIF = RunOutput(
    "atif/", _FOLDER, "one strict ATIF v1.7 file per convertible main row (`<task>-<rollout>.json`), and the three files below"
)
CAPABILITIES = RunOutput(
    "capabilities.json",
    _JSON,
    "the measured [trajectory-capability matrix](FORMATS.md#trajectory-capability-matrix-capabilitiesjson)",
    "capability matrix",
    compare=True,
)
ACCOUNTING = RunOutput(
    "accounting.json", _JSON, "expected, landed, failed and lost rollouts, per shard and in total", "run accounting", compare=True
)
GATE = RunOutput(
    "gate.json", _JSON, "the [quality gate](OPERATIONS.md#quality-gate)'s verdict, when a gate is set", "quality gate", compare=True
)
REPORT = RunOutput("report.html", "text/html", "a self-contained page: identity, scores raw against clean, verdicts, matrix, perf, links")
TABLES = RunOutput(
    "tables/",
    _FOLDER,
    "the run's evidence as six Parquet tables (`rollouts`, `turns`, `model_calls`, `tool_calls`, `findings`, `gaps`)"
    " and `_schema.json`: [TABLES.md](TABLES.md)",
)
VIEWER_PAGE = RunOutput(
    "viewer/index.html",
    "text/html",
    "the rollout viewer (its detail files beside it in `viewer/`): every main attempt, filterable,"
    " each with its findings, turns, calls, gaps and files",
    "rollout viewer",
)
MANIFEST = RunOutput(
    "manifest.json",
    _JSON,
    "the [run manifest](FORMATS.md#manifestjson): parameters, fingerprints, counts, one entry per attempt, timings",
    "run manifest",
    tables=True,
    compare=True,
)
PARAMS = RunOutput("params.json", _JSON, "the run's output-changing parameters (resume checks them)")
ATTEMPTS = RunOutput("attempts/", _FOLDER, "the per-attempt parts of an unfinished run (what `--resume` reuses)")
SUCCESS = RunOutput("_SUCCESS", "application/octet-stream", "empty, written last")

RUN_OUTPUTS: tuple[RunOutput, ...] = (
    ROLLOUTS,
    FAILURES,
    QUALITY_SUMMARY,
    VERDICTS,
    PERF_SUMMARY,
    AGGREGATE_METRICS,
    AGGREGATE_METRICS_CLEAN,
    SCORES,
    ATIF,
    ATIF_MANIFEST,
    ATIF_REJECTIONS,
    ATIF_ERROR,
    CAPABILITIES,
    ACCOUNTING,
    GATE,
    REPORT,
    TABLES,
    VIEWER_PAGE,
    MANIFEST,
    PARAMS,
    ATTEMPTS,
    SUCCESS,
)
"""Every output, in the README's order."""

REPORT_LINKS: tuple[RunOutput, ...] = (
    SCORES,
    AGGREGATE_METRICS,
    AGGREGATE_METRICS_CLEAN,
    GATE,
    ACCOUNTING,
    ROLLOUTS,
    FAILURES,
    QUALITY_SUMMARY,
    VERDICTS,
    PERF_SUMMARY,
    CAPABILITIES,
    ATIF_MANIFEST,
    ATIF_REJECTIONS,
    MANIFEST,
    VIEWER_PAGE,
)
"""The order of ``report.html``'s list of outputs (every output with a ``link``, and only those: a test checks)."""

MLFLOW_ARTIFACTS: tuple[RunOutput, ...] = (REPORT, SCORES, CAPABILITIES, QUALITY_SUMMARY, PERF_SUMMARY, MANIFEST)
"""What ``export mlflow`` copies to the MLflow run as artifacts, in the order it reports them."""


def outputs_markdown() -> str:
    """The README's table of a run directory's outputs: what each holds, and which commands read it."""
    rows = [f"| `{output.name}` | {output.meaning} | {_readers(output)} |" for output in RUN_OUTPUTS]
    return "\n".join(["| output | what it holds | used by |", "|---|---|---|", *rows]) + "\n"


def _readers(output: RunOutput) -> str:
    flags = (("report link", output.link is not None), ("`tables`", output.tables), ("`compare`", output.compare))
    readers = [name for name, reads in flags if reads]
    return ", ".join(readers + (["`export mlflow`"] if output in MLFLOW_ARTIFACTS else []))
