"""The deployments ``evidence-stage serve`` starts, built from ``configs/stage.yaml``.

- ``evidence-stage/on-eval-complete``: runs the job flow when an evaluation script emits
  ``gym.eval.completed`` (``evidence-stage notify``); the event payload becomes the parameters.
- ``evidence-stage/manual``: no schedule; reruns from the UI form or ``prefect deployment run``.
- ``evidence-stage/compare``: no schedule; compares two run directories (its own form).
- ``evidence-stage/sweep``: the bucket flow on a cron, so jobs nobody announced (or whose
  inputs or config changed) are processed too.

``configs/prefect.yaml`` declares the same three for ``prefect deploy`` with a work pool; a test
keeps the two in agreement.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from prefect.deployments.runner import RunnerDeployment
from prefect.events import DeploymentEventTrigger
from prefect.types.entrypoint import EntrypointType
from pydantic import BaseModel, ConfigDict, Field

from flows.batch import batch_flow
from flows.compare import compare_flow
from flows.stage import stage_flow
from tasks.naming import canonical_url, job_id_for

EVAL_COMPLETED = "gym.eval.completed"


class SweepConfig(BaseModel):
    """The scheduled bucket flow."""

    model_config = ConfigDict(extra="forbid")

    cron: str = Field(description="Cron expression (UTC) of the sweep.")
    prefix: str = Field(description="URL under which job folders are found.")
    max_concurrency: int = Field(default=2, ge=1, le=64, description="Jobs processed at the same time.")
    compare_previous: bool = Field(default=False, description="Compare each processed job with its previous complete run.")


class ServeConfig(BaseModel):
    """Where served runs write, with which storage options, and the sweep (none: no sweep)."""

    model_config = ConfigDict(extra="forbid")

    output: str = Field(description="Output root of triggered and swept runs.")
    storage_options: dict[str, Any] = Field(default_factory=dict, description="fsspec options, e.g. endpoint_url.")
    sweep: SweepConfig | None = None


def load_config(path: Path) -> ServeConfig:
    return ServeConfig.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def eval_completed_event(rollouts: str, capture_dir: str) -> dict[str, Any]:
    """The ``gym.eval.completed`` event for one job: local paths become absolute URLs, so a
    server process in another working directory reads the same files and derives the same job id."""
    rollouts, capture_dir = canonical_url(rollouts), canonical_url(capture_dir)
    job_id = job_id_for(rollouts)
    return {
        "event": EVAL_COMPLETED,
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
        }
    }


def sweep_parameters(config: ServeConfig, sweep: SweepConfig) -> dict[str, Any]:
    return {
        "params": {
            "prefix": sweep.prefix,
            "output": config.output,
            "max_concurrency": sweep.max_concurrency,
            "compare_previous": sweep.compare_previous,
            "storage_options": config.storage_options,
        }
    }


def build_deployments(config: ServeConfig) -> list[RunnerDeployment]:
    """The served deployments; entrypoints are module paths, so any working directory works."""
    on_eval = DeploymentEventTrigger(name="evidence-stage on gym.eval.completed", expect={EVAL_COMPLETED}, parameters=trigger_parameters(config))
    deployments = [
        stage_flow.to_deployment(
            name="on-eval-complete",
            triggers=[on_eval],
            description=f"Runs when `{EVAL_COMPLETED}` is emitted (evidence-stage notify).",
            entrypoint_type=EntrypointType.MODULE_PATH,
        ),
        stage_flow.to_deployment(
            name="manual", description="Reruns with chosen parameters (UI form or prefect deployment run).", entrypoint_type=EntrypointType.MODULE_PATH
        ),
        compare_flow.to_deployment(
            name="compare", description="Compares two run directories (UI form or prefect deployment run).", entrypoint_type=EntrypointType.MODULE_PATH
        ),
    ]
    if config.sweep is not None:
        deployments.append(
            batch_flow.to_deployment(
                name="sweep",
                cron=config.sweep.cron,
                parameters=sweep_parameters(config, config.sweep),
                description="Processes every job under the prefix without a current run.",
                entrypoint_type=EntrypointType.MODULE_PATH,
            )
        )
    return deployments
