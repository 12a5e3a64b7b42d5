"""The comparison flow: two run directories in, ``compare.json``/``.md``/``.html`` out.

Its parameters are one Pydantic model (``flows/params/compare.py``), so the Prefect UI renders a
form for it and ``evidence-stage compare`` has the same options.
"""

from __future__ import annotations

from typing import Any

from prefect import get_run_logger

from flows.execution.credentials import storage_options_with
from flows.execution.modelflow import flow
from flows.params.compare import CompareParams
from tasks.compare.task import compare_task, publish_comparison
from tasks.storage import Location


@flow(name="evidence-stage", log_prints=False, persist_result=False)  # one flow name: deployments read evidence-stage/<name>
def compare_flow(params: CompareParams) -> dict[str, Any]:
    """Compare two finished runs and attach the comparison to the flow run."""
    options = storage_options_with(params)
    output = Location(params.output, options) if params.output else None
    result = compare_task(Location(params.run_a, options), Location(params.run_b, options), output, seed=params.seed)
    publish_comparison(result)
    get_run_logger().info("comparison %s (trusted: %s) at %s", result.status, result.trusted, result.output)
    return result.summary()
