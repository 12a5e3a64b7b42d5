"""Discovery streams into the fan-out: groups run while the scan is still reading the job, and an
input error found late in the scan still fails the run cleanly (nothing published, resumable)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import tasks.attempts.task
from tasks.storage import Location, PermanentStorageError
from tests.conftest import EXAMPLE_JOB
from tests.flows.support import local_path, run_outputs, run_stage

pytestmark = pytest.mark.usefixtures("prefect_server")

COMMON = {
    "rollouts": str(EXAMPLE_JOB / "rollouts.jsonl"),
    "capture_dir": str(EXAMPLE_JOB / "model-calls"),
    "job_id": "example",
    "task_runner": "thread",
    "attempts_per_task": 2,
}
HELD_AT = 10
"""The scan of ``rollouts.jsonl`` stops before this line (after four groups' worth of rows) until a group has run."""


def _scan_held_until_a_group_runs(monkeypatch: pytest.MonkeyPatch, fail: bool) -> list[bool]:
    """Hold the scan of the job's rollouts file at ``HELD_AT`` until a group task runs (or 30 s
    pass), then go on or, with ``fail``, raise a permanent storage error there; whether a group
    ran while the scan was held is appended to the list returned."""
    ran = threading.Event()
    run_group = tasks.attempts.task.run_group

    def running(*args: object, **kwargs: object) -> object:
        ran.set()
        return run_group(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tasks.attempts.task, "run_group", running)
    iter_lines, held = Location.iter_lines, []

    def lines(self: Location, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int, bytes]]:
        for line in iter_lines(self, start, end):
            if self.name == "rollouts.jsonl" and line[0] == HELD_AT:
                held.append(ran.wait(timeout=30))
                if fail:
                    raise PermanentStorageError(self.url, "read denied")
            yield line

    monkeypatch.setattr(Location, "iter_lines", lines)
    return held


def test_the_first_groups_run_while_the_scan_is_still_reading_the_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clean = run_stage(**COMMON, output=str(tmp_path / "clean"))
    held = _scan_held_until_a_group_runs(monkeypatch, fail=False)
    streamed = run_stage(**COMMON, output=str(tmp_path / "streamed"))
    assert held == [True], "no group ran before the scan had read the whole job"
    assert run_outputs(streamed["run_dir"]) == run_outputs(clean["run_dir"])
    assert streamed["counts"] == clean["counts"]


def test_an_input_error_late_in_the_scan_fails_the_run_publishes_nothing_and_the_run_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = run_stage(**COMMON, output=str(tmp_path / "clean"))
    output = tmp_path / "out"
    held = _scan_held_until_a_group_runs(monkeypatch, fail=True)
    with pytest.raises(PermanentStorageError, match="read denied"):
        run_stage(**COMMON, output=str(output), run_id="late")
    assert held == [True]  # groups had run and written parts when the scan failed
    run = output / "example" / "runs" / "late"
    assert sorted(path.name for path in run.iterdir()) == ["attempts", "params.json"]  # no output, no _SUCCESS, no lease
    assert any((run / "attempts").rglob("*.seg"))
    assert not (output / "example" / "LATEST").exists()
    monkeypatch.undo()
    resumed = run_stage(**COMMON, output=str(output), resume="late")
    assert run_outputs(resumed["run_dir"]) == run_outputs(clean["run_dir"])
    assert (local_path(resumed["run_dir"]) / "_SUCCESS").exists()
