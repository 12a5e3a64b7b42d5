"""Where attempt groups run never changes what a run writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_JOB
from tests.flows.support import run_outputs, run_stage

pytestmark = pytest.mark.usefixtures("prefect_server")


def test_outputs_are_identical_across_runners_and_grouping(tmp_path: Path) -> None:
    common = {"rollouts": str(EXAMPLE_JOB / "rollouts.jsonl"), "capture_dir": str(EXAMPLE_JOB / "model-calls"), "output": str(tmp_path)}
    default = run_outputs(run_stage(**common)["run_dir"])
    assert "rollouts.jsonl" in default
    assert any(name.startswith("atif/") for name in default)
    variants = {
        "thread, one attempt per task": {"task_runner": "thread", "attempts_per_task": 1},
        "process pool": {"task_runner": "process", "max_workers": 2},
    }
    for name, fields in variants.items():
        assert run_outputs(run_stage(**common, **fields)["run_dir"]) == default, name


def test_attempt_workers_collect_cycles_once_per_group_not_automatically() -> None:
    """The process runner's workers run without the automatic collector; the flow process keeps it."""
    import gc

    from flows.execution.runners import attempt_pool
    from flows.params.stage import StageParams

    params = StageParams(rollouts=str(EXAMPLE_JOB / "rollouts.jsonl"), capture_dir=str(EXAMPLE_JOB / "model-calls"), output="/tmp/unused")
    with attempt_pool(params) as pool:
        assert pool is not None
        assert pool.submit(gc.isenabled).result() is False
    assert gc.isenabled()
