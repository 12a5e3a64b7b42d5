"""Every finished run emits an event naming the job and run, read back from a real Prefect server."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tasks.publish.events import RUN_COMPLETED, RUN_FAILED
from tests.conftest import EXAMPLE_JOB
from tests.flows.support import local_path, run_stage

pytestmark = pytest.mark.usefixtures("prefect_server")


def events_of(resource_prefix: str, expected: int, names: str = "evidence-stage.run.") -> list[Any]:
    """The evidence-stage events (``names``: their names' prefix, the run events by default) whose resource id
    starts with ``resource_prefix`` (waits for them)."""
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventNameFilter, EventOccurredFilter, EventResourceFilter

    query = EventFilter(
        event=EventNameFilter(prefix=[names]),
        resource=EventResourceFilter(id_prefix=[resource_prefix]),
        occurred=EventOccurredFilter(since=datetime.now(UTC) - timedelta(hours=1)),
    )
    deadline = time.monotonic() + 60
    with get_client(sync_client=True) as client:
        while True:
            found = client.read_events(filter=query, limit=50).events  # the server's maximum page
            if len(found) >= expected or time.monotonic() > deadline:
                return found
            time.sleep(0.5)


def test_a_completed_run_emits_its_counts_and_output_urls(tmp_path: Path) -> None:
    result = run_stage(
        rollouts=str(EXAMPLE_JOB / "rollouts.jsonl"),
        capture_dir=str(EXAMPLE_JOB / "model-calls"),
        output=str(tmp_path),
        job_id="evented",
        run_id="r1",
    )
    (event,) = events_of("evidence-stage.run.evented.r1", 1)
    assert event.event == RUN_COMPLETED
    assert (event.resource["evidence-stage.job-id"], event.resource["evidence-stage.run-id"]) == ("evented", "r1")
    assert event.payload["counts"] == result["counts"]
    assert event.payload["run_dir"] == result["run_dir"]
    assert local_path(event.payload["outputs"]["rollouts.jsonl"]).exists()
    assert set(event.payload["outputs"]) >= {"rollouts.jsonl", "manifest.json", "perf_summary.json"}


def test_a_failed_run_emits_what_stopped_it(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="capture"):
        run_stage(
            rollouts=str(EXAMPLE_JOB / "rollouts.jsonl"), capture_dir=str(tmp_path / "missing"), output=str(tmp_path), job_id="broken"
        )
    (event,) = events_of("evidence-stage.run.broken.", 1)
    assert event.event == RUN_FAILED
    assert event.resource["evidence-stage.run-id"] == "unclaimed"
    assert "missing" in event.payload["error"]
