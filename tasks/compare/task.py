"""The comparison as Prefect sees it: a retried task, its artifacts, and a job's new run against its previous one."""

from __future__ import annotations

import re
from typing import Any

from prefect import task
from prefect.artifacts import create_link_artifact, create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from tasks.compare.run_dirs import CompareResult, compare_run_dirs
from tasks.rundir import COMPARE_PAGE
from tasks.storage import Location
from tasks.storage.retry import retry_on_transient

compare_task = task(
    compare_run_dirs, name="compare-runs", cache_policy=NO_CACHE, persist_result=False, retries=2, retry_condition_fn=retry_on_transient
)


def publish_comparison(result: CompareResult, key: str = "evidence-stage-compare") -> None:
    """The comparison as a markdown artifact, and a link to its page."""
    create_markdown_artifact(key=artifact_key(key), markdown=result.markdown, description=f"{result.status}; trusted: {result.trusted}")
    create_link_artifact(key=artifact_key(f"{key}-page"), link=Location(result.output).child(COMPARE_PAGE).url, link_text=COMPARE_PAGE)


def artifact_key(text: str) -> str:
    """Prefect artifact keys allow lowercase letters, digits and dashes only."""
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")


def compare_with_previous(previous: Location | None, run_dir: str, job_id: str) -> dict[str, Any] | None:
    """Compare a job's new run with its previous complete run and attach it to the flow run."""
    if previous is None:
        return None
    result = compare_task(previous, Location(run_dir, previous.options))
    publish_comparison(result, key=f"evidence-stage-compare-{job_id}")
    return result.summary()
