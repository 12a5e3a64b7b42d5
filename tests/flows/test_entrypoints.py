"""Flows loaded from their files, as ``prefect deploy``'s file entrypoints load them, pickle by package path.

Prefect loads ``flows/stage.py`` as a top-level module named ``stage``; Dask pickles the flow
with each task run (it is in the flow run context). Anything the flow refers to that is defined
in that file pickles by the name ``stage``, which a Dask worker started elsewhere cannot import.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

UNPICKLE = "import sys, cloudpickle; cloudpickle.loads(sys.stdin.buffer.read()); print('loaded')"


@pytest.mark.parametrize("entrypoint", ["flows/stage.py:stage_flow", "flows/batch.py:batch_flow", "flows/compare.py:compare_flow"])
def test_a_flow_loaded_from_its_file_unpickles_in_another_process(entrypoint: str, tmp_path: object) -> None:
    import cloudpickle
    from prefect.flows import load_flow_from_entrypoint

    flow = load_flow_from_entrypoint(str(REPO / entrypoint))
    assert not flow.fn.__module__.startswith("flows.")  # loaded from the file, as by a worker
    done = subprocess.run(
        [sys.executable, "-c", UNPICKLE], check=False, input=cloudpickle.dumps(flow), cwd=tmp_path, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]


@pytest.mark.parametrize(
    "entrypoint",
    ["flows/stage.py:stage_flow", "flows/batch.py:batch_flow", "flows/compare.py:compare_flow", "flows/export.py:export_mlflow_flow"],
)
def test_the_name_prefect_reads_from_a_flow_files_source_is_the_flows_name(entrypoint: str) -> None:
    """A worker or ``prefect deploy`` that cannot import the file names its placeholder flow from the source."""
    from prefect.flows import load_flow_arguments_from_entrypoint, load_flow_from_entrypoint

    path = str(REPO / entrypoint)
    assert load_flow_arguments_from_entrypoint(path)["name"] == load_flow_from_entrypoint(path).name
