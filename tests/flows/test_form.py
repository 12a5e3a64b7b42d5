"""The deployment form, as the Prefect UI builds it from the flows' parameter schemas."""

from __future__ import annotations

import pytest
from prefect.utilities.callables import parameter_schema

from flows.batch import batch_flow
from flows.compare import compare_flow
from flows.execution.groups import GroupSizes
from flows.export import export_mlflow_flow, export_otel_flow
from flows.params.stage import MAX_TASK_RUNS, StageParams
from flows.stage import stage_flow


def _properties(flow: object, model: str) -> dict:
    return parameter_schema(flow.fn).model_dump()["definitions"][model]["properties"]


def test_the_job_form_reads_urls_then_subset_then_settings() -> None:
    names = list(_properties(stage_flow, "StageParams"))
    assert names[:5] == ["rollouts", "capture_dir", "output", "rollout_ids", "rollout_glob"]
    assert StageParams.model_json_schema()["required"] == ["rollouts", "capture_dir", "output"]


@pytest.mark.parametrize(
    ("flow", "model"),
    [
        (stage_flow, "StageParams"),
        (batch_flow, "BatchParams"),
        (compare_flow, "CompareParams"),
        (export_mlflow_flow, "MlflowExportParams"),
        (export_otel_flow, "OtelExportParams"),
    ],
)
def test_optional_fields_are_plain_fields_not_null_toggles(flow: object, model: str) -> None:
    toggles = [
        name for name, field in _properties(flow, model).items() if any(choice.get("type") == "null" for choice in field.get("anyOf", []))
    ]
    assert toggles == []


def test_blank_optional_fields_take_their_defaults() -> None:
    params = StageParams(
        rollouts="s3://b/r.jsonl", capture_dir="s3://b/c", output="s3://b/o", job_id="", failures="", attempts_per_task="", dask_address=""
    )
    assert (params.job_id, params.failures, params.attempts_per_task, params.dask_address) == (None, None, None, None)


def test_attempts_per_task_says_what_the_default_does() -> None:
    text = _properties(stage_flow, "StageParams")["attempts_per_task"]["description"]
    assert f"≤ {MAX_TASK_RUNS} task runs" in text
    assert -(-1_000_000 // GroupSizes(1_000_000, None, workers=2).next(0)) == MAX_TASK_RUNS


def test_the_form_opens_with_what_the_user_fills_in_and_maps_show_an_example() -> None:
    """Issue 35: the form's top text was a note for developers; the gate's maps had no example."""
    schema = StageParams.model_json_schema()
    assert schema["description"].startswith("One evaluation job into a new run directory")
    assert "Field order" not in schema["description"]
    gate = schema["$defs"]["GateLimits"]
    assert "``" not in gate["description"]
    for name, example in (("max_failed_share_by_class", {"judge_failed": 0.1}), ("min_observed_share", {"model_call_failed": 0.5})):
        assert gate["properties"][name]["examples"] == [example]
        assert "e.g. {" in gate["properties"][name]["description"]
