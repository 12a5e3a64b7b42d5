"""The comparison as Prefect sees it: a retried task, its artifacts, and a job's new run against its previous one."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from tasks.compare.run_dirs import CompareResult, compare_run_dirs
from tasks.publish.links import artifact_key
from tasks.publish.task import publish_link
from tasks.rundir import COMPARE_PAGE
from tasks.storage import Location
from tasks.storage.retry import retry_on_transient

compare_task = task(name="compare-runs", cache_policy=NO_CACHE, persist_result=False, retries=2, retry_condition_fn=retry_on_transient)(
    compare_run_dirs
)


def publish_comparison(result: CompareResult, key: str = "evidence-stage-compare") -> None:
    """The comparison as a markdown artifact, and a link to its page."""
    verdict = f"{result.status}; {'trusted' if result.trusted else 'not to be trusted as is'}"
    create_markdown_artifact(
        key=artifact_key(key), markdown=result.markdown, description=f"Comparison of two runs (compare.md): {verdict}."
    )
    page = Location(result.output).child(COMPARE_PAGE)
    publish_link(artifact_key(f"{key}-page"), page, COMPARE_PAGE, f"The comparison's page: {verdict}.")


def compare_with_previous(previous: Location | None, run_dir: str, job_id: str) -> dict[str, Any] | None:
    """Compare a job's new run with its previous complete run and attach it to the flow run."""
    if previous is None:
        return None
    result = compare_task(previous, Location(run_dir, previous.options))
    publish_comparison(result, key=f"evidence-stage-compare-{job_id}")
    return result.summary()
