"""The analysis tables of a run (``tables/*.parquet``), as data: tables, columns, types, docs.

Six tables, one row per attempt (``rollouts``) or per item of an attempt's evidence (``turns``,
``model_calls``, ``tool_calls``, ``findings``, ``gaps``). Every table starts with the same four
columns, ``job_id``, ``run_id``, ``attempt_key`` and ``source``: ``(job_id, run_id,
attempt_key)`` joins any row to its rollout, within a run and across runs.

Types are fixed here, never taken from the data: a column is the same logical type in every
run (a value of another type in a row is null, not a new column type). The type names are
this module's own (``string``, ``int32``, ``int64``, ``double``, ``bool``, ``list<string>``,
``map<string,double>``); ``tasks/tables`` maps them onto Arrow types. Request and response
bodies, conversations and tool outputs stay out: the tables describe the evidence, the
JSONL files hold it.

``SCHEMA_VERSION`` changes whenever a table, a column, a type or a column's meaning does;
``tests/evidence/tables/test_schema.py`` pins the fingerprint of each version, so a change
that forgets to bump it fails.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from evidence.jsonl import dumps

__all__ = [
    "SCHEMA_FILE",
    "SCHEMA_VERSION",
    "TABLES",
    "TYPES",
    "Column",
    "Table",
    "schema_document",
    "schema_fingerprint",
    "schema_markdown",
]

SCHEMA_VERSION = 1
SCHEMA_FILE = "_schema.json"
"""Written beside the tables, last: the version and every column, as ``schema_document()``."""

# logical type -> how TABLES.md and _schema.json name it in DuckDB's terms
TYPES: Mapping[str, str] = MappingProxyType(
    {
        "bool": "BOOLEAN",
        "double": "DOUBLE",
        "int32": "INTEGER",
        "int64": "BIGINT",
        "list<string>": "VARCHAR[]",
        "map<string,double>": "MAP(VARCHAR, DOUBLE)",
        "string": "VARCHAR",
    }
)


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its name, logical type (a key of ``TYPES``), whether it may be null, and one line of doc."""

    name: str
    type: str
    doc: str
    nullable: bool = True

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"column {self.name}: unknown type {self.type!r}")


@dataclass(frozen=True, slots=True)
class Table:
    """One table: its name, what one row is, and its columns in order."""

    name: str
    row: str
    columns: tuple[Column, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(column.name for column in self.columns)

    @property
    def file(self) -> str:
        """Its file name under ``tables/``."""
        return f"{self.name}.parquet"


def _c(name: str, type_: str, doc: str, *, required: bool = False) -> Column:
    return Column(name, type_, doc, nullable=not required)


KEYS = (
    _c("job_id", "string", "the job's id (manifest.json run.job_id)", required=True),
    _c("run_id", "string", "the run's id (manifest.json run.run_id)", required=True),
    _c(
        "attempt_key",
        "string",
        "the attempt's manifest key: main:LINE or failures:LINE; SHARD:main:LINE or SHARD:failures:LINE in a sharded job",
        required=True,
    ),
    _c("source", "string", "main (rollouts.jsonl) or failures (rollouts_failures.jsonl)", required=True),
)

ROLLOUT_ROW = (
    _c("shard", "int32", "position of the attempt's rollouts file in the job (0 in a one-file job)", required=True),
    _c("shard_file", "string", "name of that rollouts file (manifest.json shards[].file)"),
    _c("line", "int64", "1-based line of the row in its input file (manifest attempts[].line)", required=True),
    _c("output_line", "int64", "1-based line of the enriched row in the run's rollouts.jsonl or rollouts_failures.jsonl", required=True),
    _c("task_index", "int64", "_ng_task_index, when an integer"),
    _c("rollout_index", "int64", "_ng_rollout_index, when an integer"),
    _c("attempt_index", "int64", "_ng_attempt_index, when an integer"),
    _c("stage_index", "int64", "stage_index, when an integer"),
    _c("rollout_id", "string", "the attempt's rollout id (manifest attempts[].rollout_id: its capture file's id)"),
    _c("task_id", "string", "ng_trajectory.task_id"),
    _c("agent", "string", "agent_ref.name"),
    _c("environment_server", "string", "_ng_environment_server"),
    _c("status", "string", "the attempt's status: ok, rejected or failed (manifest attempts[].status)", required=True),
    _c("reason", "string", "why it was rejected or failed (manifest attempts[].reason)"),
    _c("notes", "list<string>", "the attempt's notes (manifest attempts[].notes; empty when none)", required=True),
    _c("repaired", "bool", "the capture was rebuilt after Gym merged (manifest attempts[].repaired)", required=True),
    _c("failure_class", "string", "_ng_failure_class (sidecar rows)"),
    _c("reward", "double", "reward, when a number (true/false read as 1/0)"),
    _c("resolved", "bool", "resolved, when a boolean"),
    _c(
        "metrics",
        "map<string,double>",
        "every top-level number or boolean of the row by key (booleans 1/0; integers beyond 2^53 rounded)",
        required=True,
    ),
    _c("perf_num_turns", "int64", "ng_perf.num_turns"),
    _c("perf_num_tool_calls", "int64", "ng_perf.num_tool_calls"),
    _c("perf_token_observability_coverage", "double", "ng_perf.token_observability_coverage"),
    _c("perf_prompt_tokens", "int64", "ng_perf.prompt_tokens (owned calls only, as 0.7.0 sums them)"),
    _c("perf_cached_prompt_tokens", "int64", "ng_perf.cached_prompt_tokens"),
    _c("perf_completion_tokens", "int64", "ng_perf.completion_tokens"),
    _c("perf_reasoning_tokens", "int64", "ng_perf.reasoning_tokens"),
    _c("perf_total_latency_ms", "double", "ng_perf.total_latency_ms"),
    _c(
        "has_trajectory",
        "bool",
        "the row has an ng_trajectory object (its turns, calls and tool calls are in the child tables)",
        required=True,
    ),
    _c("invocation_count", "int32", "entries of ng_trajectory.invocations (null without a trajectory)"),
    _c("turn_count", "int32", "rows of this attempt in turns (null without a trajectory)"),
    _c("model_call_count", "int32", "rows of this attempt in model_calls (null without a trajectory)"),
    _c("tool_call_count", "int32", "rows of this attempt in tool_calls (null without a trajectory)"),
    _c("gap_count", "int32", "rows of this attempt in gaps", required=True),
    _c("capture_call_count", "int32", "entries of ng_model_call_capture.calls (null without a capture object)"),
    _c("capture_gaps", "list<string>", "the codes of ng_model_call_capture.gaps, in order (null without a capture object)"),
    _c("bytes", "int64", "length in bytes of the enriched line, without its newline", required=True),
)

ATIF = (
    _c(
        "atif_status",
        "string",
        "exported (a file under atif/), refused (atif/rejections.jsonl) or withheld (an all-or-nothing export failed); null for failures",
    ),
    _c("atif_file", "string", "the exported ATIF file's name under atif/ (atif/manifest.jsonl trajectory_path)"),
    _c("atif_refusal", "string", "why the export refused the row (atif/rejections.jsonl error)"),
)

VERDICT = (
    _c("verdict", "string", "the health verdict: healthy, unhealthy or unobserved (health/rollout_verdicts.jsonl); null for failures"),
    _c("finding_count", "int32", "rows of this attempt in findings (null without a verdict)"),
    _c("unobserved", "list<string>", "the checks that could not be evaluated on the row (null without a verdict)"),
)

TURN_ROW = (
    _c("turn_index", "int32", "0-based position in ng_trajectory.turns (with attempt_key, the turn's key)", required=True),
    _c("invocation_id", "string", "the invocation the turn belongs to"),
    _c("turn_no", "int64", "turn_no: 1-based within its invocation"),
    _c("timestamp", "double", "when the turn started (Unix seconds)"),
    _c("step_count", "int64", "step_count"),
    _c("resolved", "bool", "resolved"),
    _c("has_answer", "bool", "the turn has a non-null answer (its text stays out)", required=True),
    _c("has_reasoning", "bool", "the turn has non-null reasoning_content (its text stays out)", required=True),
    _c("question_items", "int32", "items of the question (when a list)"),
    _c("model_call_refs", "int32", "references in the turn's model_calls (when a list)"),
)

MODEL_CALL_ROW = (
    _c("call_index", "int32", "0-based position in ng_trajectory.model_calls (with attempt_key, the call's key)", required=True),
    _c("model_call_id", "string", "model_call_id"),
    _c("response_id", "string", "response_metadata.response_id"),
    _c("invocation_id", "string", "the invocation that owns the call by ng_perf's rule (null: unowned, e.g. a judge call)"),
    _c("owned", "bool", "some invocation owns the call: ng_perf counts its tokens", required=True),
    _c("turn_index", "int32", "the first turn whose references name this call alone (joins turns.turn_index)"),
    _c("turn_no", "int64", "that turn's turn_no"),
    _c("started_at", "double", "started_at (Unix seconds)"),
    _c("completed_at", "double", "completed_at (Unix seconds)"),
    _c("duration_ms", "double", "duration_ms"),
    _c("model_server", "string", "response_metadata.model_ref.name: the Gym model server"),
    _c("model", "string", "response_metadata.model: the model that answered"),
    _c("dialect", "string", "response_metadata.dialect"),
    _c("status_code", "int64", "response_metadata.status_code"),
    _c("response_status", "string", "response_metadata.response_status"),
    _c("finish_reason", "string", "response_metadata.finish_reason"),
    _c("error_category", "string", "response_metadata.error_category"),
    _c("response_source", "string", "response_metadata.response_source: upstream or local"),
    _c("upstream_status_code", "int64", "response_metadata.upstream_status_code"),
    _c("latency_ttft_ms", "double", "response_metadata.latency_ttft_ms: time to first token"),
    _c("successful", "bool", "a successful call by health's rule (not failed; status null or 2xx/3xx)", required=True),
    _c("prompt_tokens", "int64", "token_stats.prompt_tokens"),
    _c("completion_tokens", "int64", "token_stats.completion_tokens"),
    _c("reasoning_tokens", "int64", "token_stats.reasoning_tokens"),
    _c("total_tokens", "int64", "token_stats.total_tokens"),
    _c("cached_tokens", "int64", "token_stats.cached_tokens"),
)

TOOL_CALL_ROW = (
    _c("tool_index", "int32", "0-based position in ng_trajectory.tool_calls (with attempt_key, the tool call's key)", required=True),
    _c("tool_call_id", "string", "tool_call_id"),
    _c("invocation_id", "string", "the invocation that made the call"),
    _c("tool_name", "string", "tool_name"),
    _c("sandbox_id", "string", "sandbox_id"),
    _c("started_at", "double", "started_at (Unix seconds)"),
    _c("completed_at", "double", "completed_at (Unix seconds)"),
    _c("duration_ms", "double", "duration_ms"),
    _c("timing_source", "string", "timing_source: executor, artifact or harness"),
    _c("status", "string", "status: completed, failed, timeout, cancelled, incomplete or unknown"),
    _c("error_type", "string", "error_type"),
    _c("has_output", "bool", "the tool call has a non-null output (its text stays out)", required=True),
)

FINDING_ROW = (
    _c("finding_index", "int32", "0-based position in the verdict line's findings", required=True),
    _c("check", "string", "the health check's id", required=True),
    _c("subject", "string", "what the check judges (rollout, agent_turn, model_call, ...), from the check registry"),
    _c("locator", "string", "the finding's locator as compact JSON (null when it has none)"),
    _c("locator_turn", "int64", "locator.turn, when an integer"),
    _c("locator_call_id", "string", "locator.call_id, when a string"),
    _c("detail", "string", "the finding's detail as compact JSON"),
    _c("reason", "string", "detail.reason, when a string"),
)

GAP_ROW = (
    _c("origin", "string", "where the gap was recorded: ng_model_call_capture, ng_agent_observations or ng_trajectory", required=True),
    _c("gap_index", "int32", "0-based position in that object's gaps", required=True),
    _c("code", "string", "the gap code (evidence/gaps.py; null when not a string)"),
    _c("known", "bool", "the code is in the gap-code registry (evidence.gaps.GAPS)", required=True),
    _c("invocation_id", "string", "invocation_id, when the gap names one"),
    _c("detail", "string", "detail (compact JSON when not a string)"),
)


def _table(name: str, row: str, *parts: tuple[Column, ...]) -> Table:
    return Table(name, row, tuple(column for part in parts for column in part))


TABLES: Mapping[str, Table] = MappingProxyType(
    {
        table.name: table
        for table in (
            _table(
                "rollouts",
                "one attempt: a row of rollouts.jsonl or rollouts_failures.jsonl, in manifest order",
                KEYS,
                ROLLOUT_ROW,
                ATIF,
                VERDICT,
            ),
            _table("turns", "one entry of an attempt's ng_trajectory.turns", KEYS, TURN_ROW),
            _table("model_calls", "one entry of an attempt's ng_trajectory.model_calls", KEYS, MODEL_CALL_ROW),
            _table("tool_calls", "one entry of an attempt's ng_trajectory.tool_calls", KEYS, TOOL_CALL_ROW),
            _table("findings", "one finding of a main row's line in health/rollout_verdicts.jsonl", KEYS, FINDING_ROW),
            _table(
                "gaps", "one gap of an attempt: ng_model_call_capture.gaps, ng_agent_observations.gaps, ng_trajectory.gaps", KEYS, GAP_ROW
            ),
        )
    }
)

for _each in TABLES.values():
    assert len(set(_each.names)) == len(_each.names), f"{_each.name}: column names are unique"


def schema_document() -> dict[str, object]:
    """``tables/_schema.json``: the version, and each table's row and columns (name, type, DuckDB type, nullable, doc)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "tables": {
            table.name: {
                "file": table.file,
                "row": table.row,
                "columns": [
                    {"name": c.name, "type": c.type, "duckdb": TYPES[c.type], "nullable": c.nullable, "doc": c.doc} for c in table.columns
                ],
            }
            for table in TABLES.values()
        },
    }


def schema_fingerprint() -> str:
    """sha256 of every table's name and every column's name, type and nullability, in order (docs excluded)."""
    shape = [[table.name, [[c.name, c.type, c.nullable] for c in table.columns]] for table in TABLES.values()]
    return hashlib.sha256(dumps(shape)).hexdigest()


def schema_markdown() -> str:
    """The column reference of TABLES.md: per table, one line per column (``tests`` hold TABLES.md to it)."""
    return "\n".join(_markdown_lines()) + "\n"


def _markdown_lines() -> Iterator[str]:
    yield f"Schema version {SCHEMA_VERSION}."
    for table in TABLES.values():
        yield ""
        yield f"### `{table.name}`: {table.row}"
        yield ""
        yield "| column | type | null | what it holds |"
        yield "|---|---|---|---|"
        for c in table.columns:
            yield f"| `{c.name}` | {TYPES[c.type]} | {'yes' if c.nullable else 'no'} | {c.doc.replace('|', '/')} |"
