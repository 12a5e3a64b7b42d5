"""One job's run: ``StageParams`` (the manual deployment's form, ``run``'s options) and its field types."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from flows.params.cli import Cli
from flows.params.fields import OptionalCount, OptionalText, field_of
from flows.params.gate import GATE_OPTION, GateLimits
from flows.params.storage import OptionalUrl, StorageAccess, StorageOptions, Url
from tasks.inputs.naming import canonical_url, check_id

# The fan-out's default group sizes (flows/execution/groups.py): a task run costs ~40 ms of CPU in the
# Prefect server and about as much in the flow process (measured with tests/bench on two cores),
# on the cores the attempts need, so a run has few task runs: at most MAX_TASK_RUNS, of at least
# MIN_GROUP attempts (~0.3 s of a worker's time) and, unless that bound needs more, at most
# MAX_GROUP each.
MAX_TASK_RUNS = 32
MIN_GROUP = 100
MAX_GROUP = 1000


def _canonical_rollouts(value: str | list[str]) -> str | list[str]:
    """Each path or glob, comma-separated ones included (``gym eval aggregate``'s input_glob), as an absolute URL."""

    def entry(text: str) -> str:
        return ",".join(canonical_url(part.strip()) for part in text.split(",") if part.strip())

    return entry(value) if isinstance(value, str) else [entry(item) for item in value]


def _one_or_many(given: list[str]) -> str | list[str]:
    """One ``--rollouts`` stays the one-file form ``params.json`` has always recorded."""
    return given[0] if len(given) == 1 else given


# The rollouts file of a job, or its shards: URLs, globs or comma-separated globs (tasks.inputs.shards).
Rollouts = Annotated[str | list[str], AfterValidator(_canonical_rollouts), Cli(append=True, collect=_one_or_many)]


def _ignored_checks(values: list[str]) -> list[str]:
    """The ``health`` drop-in's rule, so ``run``, ``batch``, deployments and the form agree."""
    from evidence import parse_ignored_checks  # the library loads when a run starts, not with the CLI

    return list(parse_ignored_checks(values))


IgnoredChecks = Annotated[list[str], AfterValidator(_ignored_checks)]
"""Health check ids, each entry one id or ids separated by commas; normalised, unknown ids refused."""


class TaskRunnerKind(str, Enum):  # noqa: UP042  # a StrEnum's str() differs, and is shown
    """Where attempt groups execute."""

    thread = "thread"
    process = "process"
    dask = "dask"


DEFAULT_DASK_WORKERS = 2


def check_dask_options(task_runner: TaskRunnerKind, dask_address: str | None, dask_workers: int | None) -> None:
    """Dask options only with the Dask runner, and one cluster: an existing one or a local one (they were silently ignored).

    An option counts as given whatever its value: ``--dask-workers 2``, the local cluster's
    default size, was accepted without ``--task-runner dask`` while 3 was refused.
    """
    if task_runner is not TaskRunnerKind.dask:
        given = [name for name, value in (("dask_address", dask_address), ("dask_workers", dask_workers)) if value is not None]
        if given:
            verb = "apply" if len(given) > 1 else "applies"
            raise ValueError(
                f"{' and '.join(given)} {verb} to the dask task runner only (task_runner is {task_runner.value}): add --task-runner dask"
            )
    elif dask_address is not None and dask_workers is not None:
        raise ValueError(
            "dask_workers sizes a local cluster; with dask_address the cluster is the scheduler's (size the window with max_workers)"
        )


class ScoreMask(str, Enum):  # noqa: UP042  # as TaskRunnerKind
    """Which health verdicts the clean scores mask: ``evidence.models.run.SCORE_MASKS`` says
    (not imported here, which would load the evidence library with the CLI; a test pins the two)."""

    unhealthy = "unhealthy"
    unhealthy_unobserved = "unhealthy,unobserved"
    none = "none"


Seconds = Annotated[float, Cli(parse=float, metavar="SECONDS")]
FOLLOW_SETTINGS = ("snapshot_every", "stall_after", "idle_timeout", "gate_min_rollouts", "stop_on_breach")


class StageParams(BaseModel):
    """One evaluation job into a new run directory: the job's three URLs, the rollout ids of a
    subset rerun (if any), then settings; a blank field takes its default."""

    # The class docstring is the form's text in the Prefect UI. Field order is the form's order:
    # the three URLs every run needs, the subset of a rerun, then settings with defaults.
    # Optional values are plain fields in the form (blank: the default).

    model_config = ConfigDict(extra="forbid", use_enum_values=False)

    rollouts: Rollouts = Field(
        title="Rollouts file(s)",
        description="URL of the job's rollouts JSONL (local path, file://, s3://, memory://), or several (shards): "
        "URLs, globs or comma-separated globs as `gym eval aggregate`'s input_glob; each shard's sidecars are found beside it.",
    )
    capture_dir: Url = Field(title="Capture directory", description="URL of the model-call capture directory (`model-calls/`).")
    output: Url = Field(title="Output root", description="URL under which `<job-id>/runs/<run-id>/` is written.")
    rollout_ids: Annotated[list[str], Cli(flag="--rollout-id", metavar="ID")] = Field(
        default_factory=list, title="Rollout ids", description="Subset rerun: only these rollout ids (new run, scope subset)."
    )
    rollout_glob: OptionalText = Field(default=None, title="Rollout id glob", description="Subset rerun: rollout ids matching this glob.")
    failures: OptionalUrl = Field(
        default=None,
        title="Failures sidecar",
        description="URL of the failed-attempts sidecar; blank: `<stem>_failures.jsonl` beside the rollouts file when it exists.",
    )
    job_id: OptionalText = Field(
        default=None, title="Job id", description="The job's folder under the output root; blank: rollouts folder name + hash of its URL."
    )
    run_id: OptionalText = Field(
        default=None, title="Run id", description="The new run's folder under `runs/`; blank: UTC timestamp + random suffix."
    )
    resume: Annotated[OptionalText, Cli(metavar="RUN_ID")] = Field(
        default=None, title="Resume run id", description="Continue this interrupted run in place."
    )
    session_id: OptionalText = Field(default=None, title="ATIF session id", description="The ATIF session id; blank: the job id.")
    agent_version: OptionalText = Field(
        default=None, title="ATIF agent version", description="The ATIF agent version; blank: the evidence-stage version."
    )
    ignored_checks: Annotated[IgnoredChecks, Cli(flag="--ignore-check", metavar="ID")] = Field(
        default_factory=list,
        title="Ignored health checks",
        description=(
            "Health check ids to ignore (e.g. model_call_failed), as `gym eval health-check --ignore-check` takes them:"
            " each entry one id or several separated by commas. An unknown id or an empty entry stops the run before it starts."
        ),
    )
    atif_all_or_nothing: bool = Field(
        default=False,
        title="ATIF all-or-nothing",
        description="Publish no ATIF file when any main row is rejected (0.7.0 batch behaviour).",
    )
    score_mask: ScoreMask = Field(
        default=ScoreMask.unhealthy,
        title="Score mask",
        description="Rollouts left out of the clean scores (aggregate_metrics_clean.json, scores.json), by health verdict: "
        "unhealthy, unhealthy,unobserved, or none.",
    )
    keep_parts: bool = Field(
        default=False,
        title="Keep attempt parts",
        description="Keep `attempts/` after the run is published (resume needs it only until then).",
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
        description="Where attempt groups run: process (Prefect task runs on threads, attempt work on --max-workers processes),"
        " thread, or dask.",
    )
    max_workers: int = Field(
        default=2,
        ge=1,
        le=256,
        title="Workers",
        description="Parallel attempt groups: threads, attempt processes, or tasks in flight on an existing Dask cluster.",
    )
    dask_address: OptionalText = Field(
        default=None, title="Dask scheduler", description="tcp://host:port of an existing Dask scheduler; blank: a local cluster."
    )
    dask_workers: OptionalCount = Field(
        default=None,
        ge=1,
        le=256,
        title="Local Dask workers",
        description=f"Worker processes of a local Dask cluster; blank: {DEFAULT_DASK_WORKERS}.",
    )
    storage_options: StorageOptions = field_of(StorageAccess, "storage_options")
    aws_credentials_block: OptionalText = field_of(StorageAccess, "aws_credentials_block")
    gate: Annotated[GateLimits, GATE_OPTION] = Field(
        default_factory=GateLimits,
        title="Quality gate",
        description="Limits on the run's accounting and health (all off by default). The run is always written; "
        "a failing gate leaves LATEST alone and ends the flow run Failed.",
    )

    follow: bool = Field(
        default=False,
        title="Follow a running job",
        description="Process the job while it runs: new rows as they land, a snapshot of the outputs with live.json every "
        "snapshot_every seconds, then the finished run when the job ends (OPERATIONS.md, 'Following a running job').",
    )
    snapshot_every: Seconds = Field(default=30.0, gt=0, title="Snapshot every (s)", description="With follow: seconds between snapshots.")
    stall_after: Seconds = Field(
        default=600.0,
        gt=0,
        title="Stalled after (s)",
        description="With follow: a rollout without a row whose capture has not changed for this long is stalled.",
    )
    idle_timeout: Seconds = Field(
        default=3600.0,
        gt=0,
        title="Idle timeout (s)",
        description="With follow: the job is taken as over when no new line arrived for this long (reported as such).",
    )
    gate_min_rollouts: OptionalCount = Field(
        default=None,
        ge=1,
        title="Gate from rollouts",
        description="With follow: the gate is checked on every snapshot once this many rows are in; blank: from the first row.",
    )
    stop_on_breach: bool = Field(
        default=False,
        title="Stop on breach",
        description="With follow: a snapshot that breaches the gate ends the follow (exit 3; the run is kept and resumable).",
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

    @property
    def local_dask_workers(self) -> int:
        """The size of the local Dask cluster the dask runner starts (without ``dask_address``)."""
        return self.dask_workers or DEFAULT_DASK_WORKERS

    @model_validator(mode="after")
    def _dask_options(self) -> StageParams:
        check_dask_options(self.task_runner, self.dask_address, self.dask_workers)
        return self

    @model_validator(mode="after")
    def _follow_options(self) -> StageParams:
        """The follow's settings only with follow (they were silently ignored), and a follow processes the whole job."""
        given = [name for name in FOLLOW_SETTINGS if name in self.model_fields_set]
        if given and not self.follow:
            raise ValueError(f"{' and '.join(given)} apply to follow only: add --follow")
        if self.follow and (self.rollout_ids or self.rollout_glob is not None):
            raise ValueError("follow processes the whole job: a subset (rollout_ids, rollout_glob) is rerun after it ends")
        if self.follow and self.task_runner is TaskRunnerKind.dask and self.dask_address is None:
            raise ValueError(
                "follow starts the task runner for each batch of new rows, which would start a local Dask cluster each time:"
                " give --dask-address (an existing cluster) or use the process runner"
            )
        return self

    @model_validator(mode="after")
    def _new_or_resumed(self) -> StageParams:
        """A run is new (``run_id``) or resumed (``resume``): two different ids name two runs."""
        if self.run_id is not None and self.resume is not None and self.run_id != self.resume:
            raise ValueError(
                f"run_id {self.run_id!r} contradicts resume {self.resume!r}: give run_id for a new run or resume to continue one"
            )
        return self
