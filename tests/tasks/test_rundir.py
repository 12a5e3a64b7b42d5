"""Run directories: LATEST names the newest complete full run by finish time, whatever the run ids."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from tasks.publish.task import parts_removed_meanwhile
from tasks.rundir import LATEST_FILE, RunConflict, check_apart, finished_at, mark_complete, run_dir_of, update_latest
from tasks.storage import Location, StorageError
from tests.manifests import finished_run, manifest_bytes

OUTPUT = Location("memory://out")
T0 = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)


def _publish(run_id: str, finished: datetime) -> None:
    """What publish_run leaves: the manifest, _SUCCESS, then the LATEST update."""
    run_dir = run_dir_of(OUTPUT, "job", run_id)
    run_dir.child("manifest.json").write_bytes(manifest_bytes(finished_run(run_id=run_id, finished_at=finished.isoformat())))
    mark_complete(run_dir)
    update_latest(OUTPUT.child("job"), run_id, finished)


def _latest() -> str:
    return OUTPUT.child("job", LATEST_FILE).read_bytes().decode()


@pytest.mark.usefixtures("memfs")
@pytest.mark.parametrize(
    "runs",
    [
        [("default1", 0), ("dask2", 1)],  # "dask2" < "default1" as strings
        [("r4", 0), ("20261201T180500Z-0a1b2c", 1)],  # digits sort before letters
        [("20261201T180500Z-0a1b2c", 0), ("r4", 1)],
        [("zeta", 0), ("alpha", 5), ("mid", 3)],  # a run that finished earlier publishes last
    ],
)
def test_latest_is_the_run_that_finished_last(runs: list[tuple[str, int]]) -> None:
    for run_id, minutes in runs:
        _publish(run_id, T0 + timedelta(minutes=minutes))
    newest = max(runs, key=lambda run: run[1])[0]
    assert _latest() == f"{newest}\n"


@pytest.mark.usefixtures("memfs")
def test_latest_ties_go_to_the_greater_run_id_in_any_order() -> None:
    for order in (["b", "a"], ["a", "b"]):
        OUTPUT.fs.store.clear()
        for run_id in order:
            _publish(run_id, T0)
        assert _latest() == "b\n"


@pytest.mark.usefixtures("memfs")
def test_latest_naming_a_run_without_manifest_is_replaced() -> None:
    OUTPUT.child("job", LATEST_FILE).write_bytes(b"gone\n")
    _publish("older-looking", T0)
    assert _latest() == "older-looking\n"
    assert finished_at(run_dir_of(OUTPUT, "job", "gone")) is None
    assert finished_at(run_dir_of(OUTPUT, "job", "older-looking")) == T0


@pytest.mark.parametrize(
    "output",
    ["memory://jobs/job", "memory://jobs/job/model-calls/out", "memory://jobs/job/results", "memory://jobs//job/./out/"],
)
def test_a_job_directory_among_the_inputs_is_refused(output: str) -> None:
    inputs = [Location("memory://jobs/job"), Location("memory://jobs/job/model-calls")]
    with pytest.raises(RunConflict, match="overlap"):
        check_apart(Location(output).child("job-1234"), inputs)
    with pytest.raises(RunConflict, match="overlap"):
        check_apart(Location("memory://jobs"), inputs)  # a job directory holding the inputs
    check_apart(Location("memory://jobs/job-results/job-1234"), inputs)


def _run_with_parts(run_id: str) -> Location:
    run_dir = run_dir_of(OUTPUT, "job", run_id)
    run_dir.child("attempts", "main", "a.seg").write_bytes(b"part")
    return run_dir


@pytest.mark.usefixtures("memfs")
def test_the_parts_go_while_the_block_runs_unless_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = _run_with_parts("parts")
    with parts_removed_meanwhile(run_dir, keep_parts=True):
        pass
    assert run_dir.child("attempts").is_dir()
    started, real = threading.Event(), Location.remove_tree

    def observed(self: Location) -> None:
        started.set()
        real(self)

    monkeypatch.setattr(Location, "remove_tree", observed)
    with parts_removed_meanwhile(run_dir, keep_parts=False):
        assert started.wait(timeout=30)  # begun before the block ends
    assert not run_dir.child("attempts").is_dir()


@pytest.mark.usefixtures("memfs")
def test_no_error_of_the_block_or_the_removal_is_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = _run_with_parts("errors")
    with pytest.raises(RuntimeError, match="artifacts refused"), parts_removed_meanwhile(run_dir, keep_parts=False):
        raise RuntimeError("artifacts refused")
    assert not run_dir.child("attempts").is_dir()

    def refused(self: Location) -> None:
        raise StorageError(self.url, "AccessDenied")

    monkeypatch.setattr(Location, "remove_tree", refused)
    with pytest.raises(StorageError, match="AccessDenied"), parts_removed_meanwhile(run_dir, keep_parts=False):
        pass
    with pytest.raises(RuntimeError, match="artifacts refused") as raised, parts_removed_meanwhile(run_dir, keep_parts=False):
        raise RuntimeError("artifacts refused")
    assert raised.value.__notes__ == [f"removing the parts failed too: {run_dir.child('attempts').url}: AccessDenied"]
