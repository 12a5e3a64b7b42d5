"""The flow parameters: one Pydantic model, so the Prefect UI renders a form for reruns."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, field_validator, model_validator

from tasks.inputs.naming import canonical_url, check_id

# A URL parameter: a local path becomes an absolute ``file://`` URL where the parameters are
# made (CLI, batch, serve, the flow-run process of a UI rerun). A relative path would name
# another file for a Dask worker or a served process in another working directory, and a
# stored parameter must mean the same file whoever reads it.
Url = Annotated[str, AfterValidator(canonical_url)]


def _canonical_rollouts(value: str | list[str]) -> str | list[str]:
    """Each path or glob, comma-separated ones included (``gym eval aggregate``'s input_glob), as an absolute URL."""

    def entry(text: str) -> str:
        return ",".join(canonical_url(part.strip()) for part in text.split(",") if part.strip())

    return entry(value) if isinstance(value, str) else [entry(item) for item in value]


# The rollouts file of a job, or its shards: URLs, globs or comma-separated globs (tasks.inputs.shards).
Rollouts = Annotated[str | list[str], AfterValidator(_canonical_rollouts)]

# The fan-out's default group sizes (flows/execution/groups.py): a task run costs ~40 ms of CPU in the
# Prefect server and about as much in the flow process (measured with tests/bench on two cores),
# on the cores the attempts need, so a run has few task runs: at most MAX_TASK_RUNS, of at least
# MIN_GROUP attempts (~0.3 s of a worker's time) and, unless that bound needs more, at most
# MAX_GROUP each.
MAX_TASK_RUNS = 32
MIN_GROUP = 100
MAX_GROUP = 1000


def _blank_is_none(value: Any) -> Any:
    return None if value == "" else value


def _absolute_or_none(value: str | None) -> str | None:
    return None if value is None else canonical_url(value)


# Optional values as the form shows them: one plain field (blank or absent: the default), not a
# "string or null" choice; the schema names the one type, validation still accepts None.
OptionalText = Annotated[str | None, BeforeValidator(_blank_is_none), WithJsonSchema({"type": "string"})]
OptionalUrl = Annotated[str | None, BeforeValidator(_blank_is_none), AfterValidator(_absolute_or_none), WithJsonSchema({"type": "string"})]
OptionalCount = Annotated[int | None, BeforeValidator(_blank_is_none), WithJsonSchema({"type": "integer", "minimum": 1})]
OptionalShare = Annotated[float | None, BeforeValidator(_blank_is_none), WithJsonSchema({"type": "number", "minimum": 0, "maximum": 1})]

# fsspec option names that carry credentials (s3fs, gcsfs, adlfs, HTTP auth), at any depth.
CREDENTIAL_KEYS = frozenset({
    "key", "secret", "token", "password", "aws_access_key_id", "aws_secret_access_key", "aws_session_token",
    "access_key", "secret_key", "session_token", "account_key", "sas_token", "client_secret", "credentials", "auth",
})


def _credential_keys(options: dict[str, Any]) -> set[str]:
    found = {name for name in options if name.lower() in CREDENTIAL_KEYS}
    return found.union(*(_credential_keys(value) for value in options.values() if isinstance(value, dict)))


def refuse_credentials(options: dict[str, Any]) -> dict[str, Any]:
    """Storage options without secrets: parameters are stored by the Prefect server and shown in its UI."""
    found = _credential_keys(options)
    if found:
        raise ValueError(
            f"credentials do not go in storage options ({', '.join(sorted(found))}): "
            "use the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_PROFILE) or a Prefect AwsCredentials block (--aws-credentials-block)"
        )
    return options


StorageOptions = Annotated[dict[str, Any], AfterValidator(refuse_credentials)]


def _ignored_checks(values: list[str]) -> list[str]:
    """The ``health`` drop-in's rule, so ``run``, ``batch``, deployments and the form agree."""
    from evidence.health.ignored import parse_ignored_checks  # the library loads when a run starts, not with the CLI

    return list(parse_ignored_checks(values))


IgnoredChecks = Annotated[list[str], AfterValidator(_ignored_checks)]
"""Health check ids, each entry one id or ids separated by commas; normalised, unknown ids refused."""


SHARE = {"ge": 0.0, "le": 1.0}
_PLAIN_LIMITS = ("min_landed_share", "max_lost_share", "max_failed_share", "max_unhealthy_share", "max_unobserved_share")


class GateError(ValueError):
    """A quality-gate limit that does not exist or has an unusable value."""


def _health_check_ids() -> tuple[str, ...]:
    from evidence.health.registry import CHECK_IDS  # the evidence library, only when a gate names a check

    return CHECK_IDS


def _known_checks(shares: dict[str, float]) -> dict[str, float]:
    unknown = sorted(set(shares) - set(_health_check_ids()))
    if unknown:
        raise ValueError(f"unknown health check(s): {', '.join(unknown)}")
    return shares


class GateLimits(BaseModel):
    """The quality gate's limits (``evidence.gate`` measures them); every one is off unless set."""

    model_config = ConfigDict(extra="forbid")

    min_landed_share: OptionalShare = Field(default=None, **SHARE, description="Rows that answer an owed rollout, as a share of expected.")
    max_lost_share: OptionalShare = Field(default=None, **SHARE, description="Owed rollouts with neither a row nor a sidecar row, as a share of expected.")
    max_failed_share: OptionalShare = Field(default=None, **SHARE, description="Owed rollouts whose latest sidecar row is a failure, as a share of expected.")
    max_failed_share_by_class: dict[str, Annotated[float, Field(**SHARE)]] = Field(
        default_factory=dict, description="Failure class (`_ng_failure_class`) -> the most it may be, as a share of expected."
    )
    max_unhealthy_share: OptionalShare = Field(default=None, **SHARE, description="Unhealthy verdicts, as a share of main rows.")
    max_unobserved_share: OptionalShare = Field(default=None, **SHARE, description="Unobserved verdicts, as a share of main rows.")
    min_observed_share: Annotated[dict[str, Annotated[float, Field(**SHARE)]], AfterValidator(_known_checks)] = Field(
        default_factory=dict, description="Health check id -> the least share of rollouts (tasks, for a task check) it must be evaluated on."
    )

    @property
    def active(self) -> bool:
        return bool(self.named())

    def named(self) -> dict[str, float]:
        """Every set limit by its CLI name (``max_failed_share.<class>``, ``min_observed_share.<check>``)."""
        limits = {name: value for name in _PLAIN_LIMITS if (value := getattr(self, name)) is not None}
        limits.update({f"max_failed_share.{cls}": value for cls, value in self.max_failed_share_by_class.items()})
        limits.update({f"min_observed_share.{check}": value for check, value in self.min_observed_share.items()})
        return limits

    def recorded(self) -> dict[str, Any]:
        """The set limits only, as ``params.json`` records them (an ungated run records none)."""
        return self.model_dump(exclude_defaults=True)


def gate_limits(named: dict[str, float]) -> GateLimits:
    """Limits from ``NAME=VALUE`` pairs as ``--gate`` takes them.

    Raises:
        GateError: an unknown name, a check id that is not a health check, or a value outside [0, 1].
    """
    fields: dict[str, Any] = {"max_failed_share_by_class": {}, "min_observed_share": {}}
    for name, value in named.items():
        base, _, suffix = name.partition(".")
        if base == "min_observed_share" and suffix not in _health_check_ids():
            raise GateError(f"unknown health check in gate limit {name!r} (known: {', '.join(_health_check_ids())})")
        if not ((base in _PLAIN_LIMITS and not suffix) or (base == "max_failed_share" and suffix) or base == "min_observed_share"):
            known = [*_PLAIN_LIMITS, "max_failed_share.<class>", "min_observed_share.<check>"]
            raise GateError(f"unknown gate limit {name!r} (known: {', '.join(known)})")
        if not 0.0 <= value <= 1.0:
            raise GateError(f"gate limit {name} must be a share between 0 and 1, got {value!r}")
        if not suffix:
            fields[base] = value
        else:
            fields["max_failed_share_by_class" if base == "max_failed_share" else base][suffix] = value
    return GateLimits(**fields)


class TaskRunnerKind(str, Enum):
    """Where attempt groups execute."""

    thread = "thread"
    process = "process"
    dask = "dask"


class StageParams(BaseModel):
    """Everything one run of the stage over one evaluation job needs.

    Field order is the form's order: the three URLs every run needs, the subset of a rerun, then
    settings with defaults. Optional values are plain fields in the form (blank: the default).
    """

    model_config = ConfigDict(extra="forbid", use_enum_values=False)

    rollouts: Rollouts = Field(
        title="Rollouts file(s)",
        description="URL of the job's rollouts JSONL (local path, file://, s3://, memory://), or several (shards): "
        "URLs, globs or comma-separated globs as `gym eval aggregate`'s input_glob; each shard's sidecars are found beside it.",
    )
    capture_dir: Url = Field(title="Capture directory", description="URL of the model-call capture directory (`model-calls/`).")
    output: Url = Field(title="Output root", description="URL under which `<job-id>/runs/<run-id>/` is written.")
    rollout_ids: list[str] = Field(default_factory=list, title="Rollout ids", description="Subset rerun: only these rollout ids (new run, scope subset).")
    rollout_glob: OptionalText = Field(default=None, title="Rollout id glob", description="Subset rerun: rollout ids matching this glob.")
    failures: OptionalUrl = Field(
        default=None,
        title="Failures sidecar",
        description="URL of the failed-attempts sidecar; blank: `<stem>_failures.jsonl` beside the rollouts file when it exists.",
    )
    job_id: OptionalText = Field(default=None, title="Job id", description="Blank: rollouts folder name + hash of its URL.")
    run_id: OptionalText = Field(default=None, title="Run id", description="Blank: UTC timestamp + random suffix.")
    resume: OptionalText = Field(default=None, title="Resume run id", description="Continue this interrupted run in place.")
    session_id: OptionalText = Field(default=None, title="ATIF session id", description="Blank: the job id.")
    agent_version: OptionalText = Field(default=None, title="ATIF agent version", description="Blank: the evidence-stage version.")
    ignored_checks: IgnoredChecks = Field(
        default_factory=list,
        title="Ignored health checks",
        description=(
            "Health check ids to ignore (e.g. model_call_failed), as `gym eval health-check --ignore-check` takes them:"
            " each entry one id or several separated by commas. An unknown id or an empty entry stops the run before it starts."
        ),
    )
    atif_all_or_nothing: bool = Field(
        default=False, title="ATIF all-or-nothing", description="Publish no ATIF file when any main row is rejected (0.7.0 batch behaviour)."
    )
    keep_parts: bool = Field(
        default=False, title="Keep attempt parts", description="Keep `attempts/` after the run is published (resume needs it only until then)."
    )
    attempts_per_task: OptionalCount = Field(
        default=None,
        ge=1,
        le=100_000,
        title="Attempts per task",
        description=(
            f"Group size of the fan-out; blank: large groups first, shrinking to {MIN_GROUP} at the end so no worker waits long"
            f" for another's last group (at most {MAX_GROUP}, and more where needed to keep a run at ≤ {MAX_TASK_RUNS} task runs)."
        ),
    )
    task_runner: TaskRunnerKind = Field(
        default=TaskRunnerKind.process,
        title="Task runner",
        description="process (default: Prefect task runs on threads, attempt work on --max-workers processes), thread, or dask.",
    )
    max_workers: int = Field(default=2, ge=1, le=256, title="Workers", description="Parallel attempt groups: threads, attempt processes, or tasks in flight on an existing Dask cluster.")
    dask_address: OptionalText = Field(default=None, title="Dask scheduler", description="tcp://host:port of an existing Dask scheduler; blank: a local cluster.")
    dask_workers: int = Field(default=2, ge=1, le=256, title="Local Dask workers", description="Worker processes of a local Dask cluster.")
    storage_options: StorageOptions = Field(
        default_factory=dict, title="Storage options", description="fsspec options without credentials, e.g. endpoint_url."
    )
    aws_credentials_block: OptionalText = Field(
        default=None, title="AWS credentials block", description="Name of a prefect-aws AwsCredentials block for S3; blank: the environment."
    )
    gate: GateLimits = Field(
        default_factory=GateLimits,
        title="Quality gate",
        description="Limits on the run's accounting and health (all off by default). The run is always written; "
        "a failing gate leaves LATEST alone and ends the flow run Failed.",
    )

    @field_validator("run_id", "resume", "job_id")
    @classmethod
    def _safe_name(cls, value: str | None) -> str | None:
        return None if value is None else check_id(value)

    @field_validator("session_id", "agent_version")
    @classmethod
    def _not_whitespace(cls, value: str | None) -> str | None:
        """0.7.0's export refuses its configuration for these (before any row); so does the run."""
        if value is not None and not value.strip():
            raise ValueError("must contain a non-whitespace character")
        return value

    @model_validator(mode="after")
    def _new_or_resumed(self) -> StageParams:
        """A run is new (``run_id``) or resumed (``resume``): two different ids name two runs."""
        if self.run_id is not None and self.resume is not None and self.run_id != self.resume:
            raise ValueError(f"run_id {self.run_id!r} contradicts resume {self.resume!r}: give run_id for a new run or resume to continue one")
        return self


class MlflowExportParams(BaseModel):
    """Export one finished run directory to an MLflow tracking server."""

    model_config = ConfigDict(extra="forbid")

    run_dir: Url = Field(title="Run directory", description="URL of a finished run directory (`<output>/<job-id>/runs/<run-id>`).")
    tracking_uri: str = Field(title="MLflow tracking URI", description="http(s) URL of the MLflow server (its /v1/traces receives the traces).")
    experiment: str = Field(default="evidence-stage", min_length=1, title="Experiment", description="MLflow experiment name (created when absent).")
    storage_options: StorageOptions = Field(default_factory=dict, title="Storage options", description="fsspec options without credentials, e.g. endpoint_url.")


class OtelExportParams(BaseModel):
    """Export one finished run directory's rollout traces to an OTLP/HTTP endpoint."""

    model_config = ConfigDict(extra="forbid")

    run_dir: Url = Field(title="Run directory", description="URL of a finished run directory (`<output>/<job-id>/runs/<run-id>`).")
    endpoint: str = Field(title="OTLP endpoint", description="OTLP/HTTP URL; `/v1/traces` is appended unless the URL ends with it.")
    headers: dict[str, str] = Field(default_factory=dict, title="Headers", description="HTTP headers sent with every export request.")
    storage_options: StorageOptions = Field(default_factory=dict, title="Storage options", description="fsspec options without credentials, e.g. endpoint_url.")
