"""A bucket of jobs: ``BatchParams`` (the sweep's form, ``batch``'s options), whose job options are ``StageParams``' own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from flows.params.cli import Cli
from flows.params.fields import OptionalCount, OptionalText, field_of
from flows.params.gate import GateLimits
from flows.params.stage import IgnoredChecks, ScoreMask, StageParams, TaskRunnerKind, check_dask_options
from flows.params.storage import StorageAccess, StorageOptions, Url
from tasks.inputs.layout import DEFAULT_CAPTURE_DIR, DEFAULT_EXCLUDE_GLOBS, DEFAULT_ROLLOUTS_GLOB, DEFAULT_SHARD_GLOB, JobLayout

if TYPE_CHECKING:
    from tasks.batch.jobs import FoundJob  # job finding loads the storage layer and the evidence library


def _as_in_stage(name: str) -> Any:
    """The job flow's own field, so both forms and both commands read the same."""
    return field_of(StageParams, name)


class BatchParams(BaseModel):
    """A prefix of evaluation jobs, where their runs go, and the options every job run gets."""

    model_config = ConfigDict(extra="forbid")

    prefix: Annotated[Url, Cli(positional=True)] = Field(
        title="Jobs prefix", description="URL under which job folders are found (s3://bucket/prefix, local path, memory://)."
    )
    output: Url = Field(title="Output root", description="URL under which `<job-id>/runs/<run-id>/` and `batches/` are written.")
    force: bool = Field(default=False, title="Force", description="Process every job, even when its LATEST run has the same fingerprints.")
    max_concurrency: int = Field(default=2, ge=1, le=64, title="Concurrent jobs", description="Jobs processed at the same time.")
    rollouts_glob: str = Field(
        default=DEFAULT_ROLLOUTS_GLOB, title="Rollouts file glob", description="Which files in a job folder can be its rollouts file."
    )
    exclude_globs: Annotated[list[str], Cli(flag="--exclude-glob", metavar="GLOB")] = Field(
        default=list(DEFAULT_EXCLUDE_GLOBS),
        title="Excluded file globs",
        description="Files that are never rollouts files (sidecars, Gym's own outputs).",
    )
    capture_dir_name: str = Field(
        default=DEFAULT_CAPTURE_DIR, title="Capture directory name", description="The folder that marks a job folder."
    )
    shard_glob: str = Field(
        default=DEFAULT_SHARD_GLOB,
        title="Shard file glob",
        description="A folder whose rollouts files all match this glob is one sharded job (else several files are ambiguous).",
    )
    compare_previous: bool = Field(
        default=False,
        title="Compare with the previous run",
        description="Compare each processed job with its previous complete run (artifact + compare files).",
    )
    ignored_checks: IgnoredChecks = _as_in_stage("ignored_checks")
    atif_all_or_nothing: bool = _as_in_stage("atif_all_or_nothing")
    keep_parts: bool = _as_in_stage("keep_parts")
    attempts_per_task: OptionalCount = _as_in_stage("attempts_per_task")
    task_runner: TaskRunnerKind = _as_in_stage("task_runner")
    max_workers: int = _as_in_stage("max_workers")
    dask_address: OptionalText = _as_in_stage("dask_address")
    dask_workers: OptionalCount = _as_in_stage("dask_workers")
    storage_options: StorageOptions = field_of(StorageAccess, "storage_options")
    aws_credentials_block: OptionalText = field_of(StorageAccess, "aws_credentials_block")
    gate: GateLimits = _as_in_stage("gate")
    score_mask: ScoreMask = _as_in_stage("score_mask")

    @model_validator(mode="after")
    def _dask_options(self) -> BatchParams:
        check_dask_options(self.task_runner, self.dask_address, self.dask_workers)
        return self

    @property
    def layout(self) -> JobLayout:
        return JobLayout(self.rollouts_glob, tuple(self.exclude_globs), self.capture_dir_name, self.shard_glob)

    def job_params(self, job: FoundJob) -> StageParams:
        """The job flow's parameters for one found job (ids and ATIF defaults as ``run`` gives them)."""
        shared = self.model_dump(include=set(StageParams.model_fields) - {"output"})
        return StageParams(rollouts=job.rollouts, capture_dir=job.capture_dir, output=self.output, **shared)
