"""The export deployments: triggered by ``evidence-stage.run.completed`` on a real Prefect server."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from flows.deployments import ON_RUN_COMPLETED, RUN_COMPLETED, ServeConfig, build_deployments
from flows.export import MLFLOW_FLOW, OTEL_FLOW, export_mlflow_flow
from flows.params.export import MlflowExportParams
from tests.flows.test_deployments import prefect_client, wait_for

CONFIG = {
    "output": "s3://evals/evidence-stage",
    "storage_options": {"endpoint_url": "http://127.0.0.1:9000"},
    "export": {
        "mlflow": {"tracking_uri": "http://mlflow:5000", "experiment": "evals"},
        "otel": {"endpoint": "http://collector:4318", "headers": {"a": "b"}},
    },
}


def test_each_configured_target_gets_a_deployment_on_run_completed() -> None:
    exports = {d.flow_name: d for d in build_deployments(ServeConfig.model_validate(CONFIG)) if d.name == ON_RUN_COMPLETED}
    assert set(exports) == {MLFLOW_FLOW, OTEL_FLOW}
    for deployment in exports.values():
        (trigger,) = deployment.triggers
        assert trigger.expect == {RUN_COMPLETED}
    assert exports[MLFLOW_FLOW].triggers[0].parameters == {
        "params": {
            "run_dir": "{{ event.payload.run_dir }}",
            "tracking_uri": "http://mlflow:5000",
            "experiment": "evals",
            "storage_options": CONFIG["storage_options"],
        }
    }
    assert exports[OTEL_FLOW].triggers[0].parameters["params"]["headers"] == {"a": "b"}
    with_block = ServeConfig.model_validate({**CONFIG, "aws_credentials_block": "s3-block"})
    exported = [d for d in build_deployments(with_block) if d.name == ON_RUN_COMPLETED]
    # An export reads the run with the block's credentials, as the job flow wrote it.
    assert [d.triggers[0].parameters["params"].get("aws_credentials_block") for d in exported] == ["s3-block", "s3-block"]
    assert not [d for d in build_deployments(ServeConfig(output="out")) if d.name == ON_RUN_COMPLETED]


def _runs_of(url: str, deployment_id: Any) -> list[Any]:
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    with prefect_client(url) as client:
        return client.read_flow_runs(deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id])))


def test_the_event_starts_an_export_whose_artifact_links_the_mlflow_run(
    prefect_server: str, mlflow_server: str, example_run_dir: Path
) -> None:
    """The server's automation turns the event into a flow run with the payload's run_dir; that
    run's parameters export the run, and the flow links the MLflow run in an artifact."""
    from prefect.events import emit_event

    config = ServeConfig.model_validate(
        {"output": str(example_run_dir.parent), "export": {"mlflow": {"tracking_uri": mlflow_server, "experiment": "triggered"}}}
    )
    (deployment,) = [d for d in build_deployments(config) if d.name == ON_RUN_COMPLETED]
    deployment_id = deployment.apply()
    with prefect_client(prefect_server) as client:
        wait_for(lambda: client.read_automations_by_name(deployment.triggers[0].name), "the trigger's automation", timeout=60)
    time.sleep(1)  # the server's trigger service loads new automations
    emit_event(RUN_COMPLETED, resource={"prefect.resource.id": "evidence-stage.run.test"}, payload={"run_dir": str(example_run_dir)})
    (run,) = wait_for(lambda: _runs_of(prefect_server, deployment_id), "the triggered flow run", timeout=120)
    params = run.parameters["params"]
    assert params["run_dir"] == str(example_run_dir)
    assert params["tracking_uri"] == mlflow_server

    result = export_mlflow_flow(MlflowExportParams.model_validate(params))
    with prefect_client(prefect_server) as client:
        from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

        links = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["evidence-stage-mlflow-run"])))
    url = f"{mlflow_server}/#/experiments/{result['experiment_id']}/runs/{result['run_id']}"
    assert [link.data for link in links] == [f"[MLflow run {result['run_id']}]({url})"]
