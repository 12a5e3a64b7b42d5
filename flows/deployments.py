"""The deployments ``evidence-stage serve`` starts, built from ``configs/stage.yaml``.

- ``evidence-stage/on-eval-complete``: runs the job flow when an evaluation script emits
  ``gym.eval.completed`` (``evidence-stage notify``); the event payload becomes the parameters.
- ``evidence-stage/manual``: no schedule; reruns from the UI form or ``prefect deployment run``.
- ``evidence-stage/compare``: no schedule; compares two run directories (its own form).
- ``evidence-stage/follow`` (only with a ``follow`` section): the job flow with ``follow`` on, when an
  evaluation script emits ``gym.eval.started`` (``evidence-stage notify --started``) as its job starts.
- ``evidence-stage/sweep``: the bucket flow on a cron, so jobs nobody announced (or whose
  inputs or config changed) are processed too.
- ``evidence-stage-export-mlflow/on-run-completed`` and ``evidence-stage-export-otel/on-run-completed``
  (only with an ``export`` section): export each finished run when ``evidence-stage.run.completed``
  is emitted; the event payload's ``run_dir`` names the run.

``serve`` also installs the automation that marks a flow run ``Crashed`` when its process stops
sending heartbeats (``install_crash_automation``; OPERATIONS.md gives it for ``prefect deploy``).

``configs/prefect.yaml`` declares the same five (without the export ones) for ``prefect deploy`` with a work pool; a test
keeps the two in agreement.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import yaml
from prefect import Flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import StateType
from prefect.deployments.runner import RunnerDeployment
from prefect.events import DeploymentEventTrigger
from prefect.events.actions import ChangeFlowRunState
from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture
from prefect.events.schemas.events import ResourceSpecification
from prefect.settings import get_current_settings
from prefect.types.entrypoint import EntrypointType
from pydantic import BaseModel, ConfigDict, Field

from flows.batch import batch_flow
from flows.compare import compare_flow
from flows.export import export_mlflow_flow, export_otel_flow
from flows.params.batch import BatchParams
from flows.params.export import MlflowExportParams, OtelExportParams
from flows.params.fields import OptionalCount, OptionalText, field_of
from flows.params.gate import GateLimits
from flows.params.stage import ScoreMask, StageParams
from flows.params.storage import StorageAccess, StorageOptions, Url
from flows.stage import stage_flow
from tasks.inputs.naming import canonical_url, job_id_for
from tasks.publish.events import RUN_COMPLETED

EVAL_COMPLETED = "gym.eval.completed"
EVAL_STARTED = "gym.eval.started"
ON_RUN_COMPLETED = "on-run-completed"
CRASH_AUTOMATION = "evidence-stage: crash flow runs without heartbeats"
HEARTBEAT = "prefect.flow-run.heartbeat"
RUNNING = "prefect.flow-run.Running"
FINAL_EVENTS = {f"prefect.flow-run.{state}" for state in ("Completed", "Failed", "Cancelled", "Crashed")}
# A run is dead after this many heartbeat periods without one: one late heartbeat is not a crash.
MISSED_HEARTBEATS = 3


class SweepConfig(BaseModel):
    """The scheduled bucket flow."""

    model_config = ConfigDict(extra="forbid")

    cron: str = Field(description="Cron expression (UTC) of the sweep.")
    prefix: Url = field_of(BatchParams, "prefix")
    max_concurrency: int = field_of(BatchParams, "max_concurrency")
    compare_previous: bool = field_of(BatchParams, "compare_previous")


class MlflowTarget(BaseModel):
    """The MLflow server every finished run is exported to."""

    model_config = ConfigDict(extra="forbid")

    tracking_uri: str = field_of(MlflowExportParams, "tracking_uri")
    experiment: str = field_of(MlflowExportParams, "experiment")


class OtelTarget(BaseModel):
    """The OTLP/HTTP endpoint every finished run's traces are sent to."""

    model_config = ConfigDict(extra="forbid")

    endpoint: str = field_of(OtelExportParams, "endpoint")
    headers: dict[str, str] = field_of(OtelExportParams, "headers")


class FollowConfig(BaseModel):
    """The follow deployment: the job flow with ``follow`` on, started when a job starts (``gym.eval.started``)."""

    model_config = ConfigDict(extra="forbid")
    snapshot_every: float = field_of(StageParams, "snapshot_every")
    stall_after: float = field_of(StageParams, "stall_after")
    idle_timeout: float = field_of(StageParams, "idle_timeout")
    gate_min_rollouts: OptionalCount = field_of(StageParams, "gate_min_rollouts")
    stop_on_breach: bool = field_of(StageParams, "stop_on_breach")


class ExportConfig(BaseModel):
    """Where finished runs are exported (each target optional)."""

    model_config = ConfigDict(extra="forbid")

    mlflow: MlflowTarget | None = None
    otel: OtelTarget | None = None


class ServeConfig(BaseModel):
    """Where served runs write, with which storage options, the sweep and the exports (none: not served)."""

    model_config = ConfigDict(extra="forbid")

    output: Url = Field(description="Output root of triggered and swept runs.")
    storage_options: StorageOptions = field_of(StorageAccess, "storage_options")
    aws_credentials_block: OptionalText = field_of(StorageAccess, "aws_credentials_block")
    gate: GateLimits = Field(default_factory=GateLimits, description="Quality gate of triggered and swept runs (off unless set).")
    score_mask: ScoreMask = Field(
        default=ScoreMask.unhealthy, description="Rollouts the clean scores of triggered and swept runs leave out, by health verdict."
    )
    sweep: SweepConfig | None = None
    follow: FollowConfig | None = None
    export: ExportConfig | None = None

    @property
    def credentials_parameter(self) -> dict[str, str]:
        """The block's name as a run parameter, absent when none is set: the server's schema check refuses a null."""
        return {} if self.aws_credentials_block is None else {"aws_credentials_block": self.aws_credentials_block}

    @property
    def gate_parameter(self) -> dict[str, Any]:
        """The gate as a run parameter, absent when none is set (an ungated deployment's parameters stay as they were)."""
        return {"gate": self.gate.recorded()} if self.gate.active else {}

    @property
    def score_mask_parameter(self) -> dict[str, str]:
        """The score mask as a run parameter, absent when it is the default (the deployments' parameters stay as they were)."""
        return {} if self.score_mask is ScoreMask.unhealthy else {"score_mask": self.score_mask.value}


def load_config(path: Path) -> ServeConfig:
    return ServeConfig.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def eval_event(rollouts: str, capture_dir: str, name: str = EVAL_COMPLETED) -> dict[str, Any]:
    """The ``gym.eval.completed`` (or ``gym.eval.started``) event for one job: local paths become absolute
    URLs, so a server process in another working directory reads the same files and derives the same job id."""
    rollouts, capture_dir = canonical_url(rollouts), canonical_url(capture_dir)
    job_id = job_id_for(rollouts)
    return {
        "event": name,
        "resource": {"prefect.resource.id": f"gym.eval.{job_id}", "prefect.resource.name": job_id},
        "payload": {"rollouts": rollouts, "capture_dir": capture_dir},
    }


def trigger_parameters(config: ServeConfig) -> dict[str, Any]:
    """The job flow's parameters, templated from the event payload (Jinja, rendered by the server)."""
    return {
        "params": {
            "rollouts": "{{ event.payload.rollouts }}",
            "capture_dir": "{{ event.payload.capture_dir }}",
            "output": config.output,
            "storage_options": config.storage_options,
            **config.credentials_parameter,
            **config.gate_parameter,
            **config.score_mask_parameter,
        }
    }


def follow_parameters(config: ServeConfig, follow: FollowConfig) -> dict[str, Any]:
    """The triggered job flow's parameters with ``follow`` on and the follow's settings (a blank one left out)."""
    settings = {key: value for key, value in follow.model_dump().items() if value is not None}
    return {"params": {**trigger_parameters(config)["params"], "follow": True, **settings}}


def sweep_parameters(config: ServeConfig, sweep: SweepConfig) -> dict[str, Any]:
    return {
        "params": {
            "prefix": sweep.prefix,
            "output": config.output,
            "max_concurrency": sweep.max_concurrency,
            "compare_previous": sweep.compare_previous,
            "storage_options": config.storage_options,
            **config.credentials_parameter,
            **config.gate_parameter,
            **config.score_mask_parameter,
        }
    }


def export_parameters(config: ServeConfig, target: MlflowTarget | OtelTarget) -> dict[str, Any]:
    """An export flow's parameters: the run directory from the event payload, the target from the config."""
    return {
        "params": {
            "run_dir": "{{ event.payload.run_dir }}",
            **target.model_dump(),
            "storage_options": config.storage_options,
            **config.credentials_parameter,
        }
    }


def deployment(flow: Flow[..., Any], **options: Any) -> RunnerDeployment:
    """``flow.to_deployment(**options)`` with a module-path entrypoint (so any working directory
    works). Prefect types it as the deployment or its coroutine (it dispatches on the caller);
    from this synchronous code it is the deployment."""
    return cast(RunnerDeployment, flow.to_deployment(entrypoint_type=EntrypointType.MODULE_PATH, **options))


def export_deployments(config: ServeConfig) -> list[RunnerDeployment]:
    """One deployment per configured export target, triggered by ``evidence-stage.run.completed``."""
    export = config.export or ExportConfig()
    targets: list[tuple[Flow[..., Any], MlflowTarget | OtelTarget | None, str]] = [
        (export_mlflow_flow, export.mlflow, "MLflow"),
        (export_otel_flow, export.otel, "an OTLP endpoint"),
    ]
    return [
        deployment(
            flow,
            name=ON_RUN_COMPLETED,
            triggers=[
                DeploymentEventTrigger(
                    name=f"{flow.name} on {RUN_COMPLETED}", expect={RUN_COMPLETED}, parameters=export_parameters(config, target)
                )
            ],
            description=f"Exports each finished run to {where} when `{RUN_COMPLETED}` is emitted.",
        )
        for flow, target, where in targets
        if target is not None
    ]


def build_deployments(config: ServeConfig) -> list[RunnerDeployment]:
    """The served deployments; entrypoints are module paths, so any working directory works."""
    on_eval = DeploymentEventTrigger(
        name="evidence-stage on gym.eval.completed", expect={EVAL_COMPLETED}, parameters=trigger_parameters(config)
    )
    deployments = [
        deployment(
            stage_flow,
            name="on-eval-complete",
            triggers=[on_eval],
            description=f"Runs when `{EVAL_COMPLETED}` is emitted (evidence-stage notify).",
        ),
        deployment(
            stage_flow,
            name="manual",
            description="Reruns with chosen parameters (UI form or prefect deployment run).",
        ),
        deployment(
            compare_flow,
            name="compare",
            description="Compares two run directories (UI form or prefect deployment run).",
        ),
    ]
    if config.follow is not None:
        on_start = DeploymentEventTrigger(
            name="evidence-stage on gym.eval.started", expect={EVAL_STARTED}, parameters=follow_parameters(config, config.follow)
        )
        deployments.append(
            deployment(
                stage_flow,
                name="follow",
                triggers=[on_start],
                description=f"Follows a job from `{EVAL_STARTED}` (evidence-stage notify --started) until it ends.",
            )
        )
    deployments += export_deployments(config)
    if config.sweep is not None:
        deployments.append(
            deployment(
                batch_flow,
                name="sweep",
                cron=config.sweep.cron,
                parameters=sweep_parameters(config, config.sweep),
                description="Processes every job under the prefix without a current run.",
            )
        )
    return deployments


def crash_automation(heartbeat_seconds: int) -> AutomationCore:
    """Prefect's zombie-run automation: a flow run whose heartbeats stop before it ends is Crashed.

    Every flow run sends ``prefect.flow-run.heartbeat`` every ``heartbeat_seconds``
    (``PREFECT_FLOWS_HEARTBEAT_FREQUENCY``, alias ``PREFECT_RUNNER_HEARTBEAT_FREQUENCY``) from its
    own process; a process killed with ``-9`` can report nothing, so only the server can notice.
    The watch starts at the server's own ``Running`` event as well as at each heartbeat: the
    first heartbeat leaves the process through a background sender, so a process killed within
    its first second may never have sent one. Only this project's flows (named
    ``evidence-stage*``) are watched, since other flows on the server may run without heartbeats.
    """
    return AutomationCore(
        name=CRASH_AUTOMATION,
        description=f"Marks a flow run Crashed when {MISSED_HEARTBEATS} heartbeat periods pass without a heartbeat or a final state.",
        trigger=EventTrigger(
            after={RUNNING, HEARTBEAT},
            expect={HEARTBEAT, *FINAL_EVENTS},
            match=ResourceSpecification({"prefect.resource.id": ["prefect.flow-run.*"]}),
            match_related=ResourceSpecification({"prefect.resource.role": "flow", "prefect.resource.name": f"{stage_flow.name}*"}),
            for_each={"prefect.resource.id"},
            posture=Posture.Proactive,
            threshold=1,
            within=timedelta(seconds=MISSED_HEARTBEATS * heartbeat_seconds),
        ),
        actions=[ChangeFlowRunState(state=StateType.CRASHED, message="The flow run's process stopped sending heartbeats.")],
    )


def install_crash_automation() -> None:
    """Create or update the crash automation for this process's heartbeat period (none if heartbeats are off)."""
    seconds = get_current_settings().flows.heartbeat_frequency
    if seconds is None:
        return
    automation = crash_automation(seconds)
    with get_client(sync_client=True) as client:
        existing = client.read_automations_by_name(CRASH_AUTOMATION)
        if existing:
            client.update_automation(existing[0].id, automation)
        else:
            client.create_automation(automation)
