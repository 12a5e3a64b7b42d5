"""``run --follow`` on a job as NeMo Gym 0.7.0 writes it (``tests/producer.py``), on a real Prefect server.

Small jobs at fast rates: each test follows a job for a few seconds.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest

from flows.cli.main import main
from flows.params.stage import StageParams
from flows.stage import stage_flow
from tasks.publish.events import JOB_GATE_BREACHED, JOB_SNAPSHOT
from tests.flows.support import local_path, run_stage, tree_digest
from tests.flows.test_artifacts import artifacts_of
from tests.flows.test_events import events_of
from tests.flows.test_operator_edges import _claimed, _start
from tests.jobgen import generate_job
from tests.producer import Producer, Rollout

pytestmark = pytest.mark.usefixtures("prefect_server")

FOLLOW = {"follow": True, "snapshot_every": 0.5, "idle_timeout": 60.0}
NOT_COMPARED = ("manifest.json", "report.html", "live.json")  # run block and timings; the live status


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("template") / "job"
    generate_job(root, rollouts=24, calls_per_rollout=2, history_bytes=100)
    return root


def _job_args(job: Path, output: Path) -> dict[str, Any]:
    return {"rollouts": str(job / "rollouts.jsonl"), "capture_dir": str(job / "model-calls"), "output": str(output), "job_id": "j"}


def _argv(job: Path, output: Path) -> list[str]:
    return ["run", "--rollouts", str(job / "rollouts.jsonl"), "--capture-dir", str(job / "model-calls"), "--output", str(output)]


class Watcher:
    """Every distinct ``live.json`` a run directory showed, read as the follow writes them."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / "live.json"
        self.seen: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            try:
                document = orjson.loads(self.path.read_bytes())
            except (OSError, orjson.JSONDecodeError):
                document = None
            if document is not None and (not self.seen or self.seen[-1] != document):
                self.seen.append(document)
            time.sleep(0.05)

    def until(self, condition: Callable[[dict[str, Any]], bool], timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [document for document in self.seen if condition(document)]
            if found:
                return found[0]
            time.sleep(0.05)
        raise AssertionError(f"no live.json such as expected in {timeout} s; seen: {self.seen[-3:]}")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _outputs(run_dir: Path) -> dict[str, str]:
    return {k: v for k, v in tree_digest(str(run_dir)).items() if k not in NOT_COMPARED and not k.startswith("attempts/")}


def _keys(rollouts: Iterable[Rollout]) -> set[tuple[int, int]]:
    rows = (orjson.loads(line) for rollout in rollouts for _, line in rollout.rows)
    return {(row["_ng_task_index"], row["_ng_rollout_index"]) for row in rows}


def _interrupted_task(producer: Producer) -> set[str]:
    """The rollouts of the task the producer was interrupted in whose key has no row: captures, no answer."""
    done = [producer.rollouts[i] for i in producer.completed]
    task = max(rollout.task for rollout in done)
    return {f"{t}-{r}" for t, r in _keys(r for r in producer.rollouts if r.task == task) - _keys(done)}


def _error_line(code: int, capsys: pytest.CaptureFixture[str]) -> str:
    """The one line a follow that could not go on ends with (exit 2, no traceback)."""
    assert code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


def _named(live: dict[str, Any], listed: str) -> set[str]:
    return {item["rollout"] for item in live[listed]}


def test_a_followed_job_shows_partial_counts_and_stalled_work_then_ends_as_a_post_hoc_run(template: Path, tmp_path: Path) -> None:
    job = tmp_path / "job"
    late = next(r.rollout_id for r in Producer(template, job).rollouts if r.task == 5 and r.rollout_id)
    producer = Producer(template, job, rows_per_second=12, interrupt_after=10, late_capture=(late,))
    watcher = Watcher(tmp_path / "out" / "j" / "runs" / "live")
    stalled: set[str] = set()

    def produce() -> None:
        producer.run()  # interrupted: the task's other rollouts have captures and no rows
        stalled.update(_interrupted_task(producer))
        deadline = time.monotonic() + 60
        while not any(stalled <= _named(live, "in_flight_rollouts") for live in watcher.seen) and time.monotonic() < deadline:
            for rollout in stalled:  # still running: their captures keep changing
                os.utime(job / "model-calls" / f"{rollout}.capture.jsonl")
            time.sleep(0.1)
        watcher.until(lambda live: stalled <= _named(live, "stalled_rollouts"))  # then still for longer than stall_after
        producer.resume().wait()

    threading.Thread(target=produce, daemon=True).start()
    try:
        state = stage_flow(StageParams(**_job_args(job, tmp_path / "out"), run_id="live", stall_after=1.0, **FOLLOW), return_state=True)
    finally:
        watcher.stop()
    result = state.result()
    assert result["follow_ended"] == "aggregate_metrics"
    progress = [key for key in artifacts_of(state.state_details.flow_run_id) if key.startswith("progress:")]
    assert len(progress) == 1, progress  # updated in place by every batch of rows, not one more per snapshot
    total = sum(len(r.rows) for r in producer.rollouts)
    partial = [live for live in watcher.seen if not live["done"] and 0 < live["rows"] + live["failures"] < total]
    assert partial, watcher.seen
    assert all(live["expected"] == 24 for live in partial)
    assert stalled
    assert any(stalled <= _named(live, "in_flight_rollouts") for live in partial)
    assert any(stalled <= _named(live, "stalled_rollouts") for live in partial)
    final = orjson.loads((tmp_path / "out" / "j" / "runs" / "live" / "live.json").read_bytes())
    assert (final["done"], final["rows"], final["stalled"], final["ended"]) == (True, 24, 0, "aggregate_metrics")

    post_hoc = run_stage(**_job_args(job, tmp_path / "post"), run_id="live")
    followed, finished = local_path(result["run_dir"]), local_path(post_hoc["run_dir"])
    assert _outputs(followed) == _outputs(finished)
    assert (followed / "_SUCCESS").exists()
    assert (tmp_path / "out" / "j" / "LATEST").read_text().strip() == "live"
    followed_manifest, finished_manifest = (orjson.loads((d / "manifest.json").read_bytes()) for d in (followed, finished))
    for manifest in (followed_manifest, finished_manifest):
        manifest.pop("run"), manifest.pop("timings")
        for entry in manifest["attempts"]:
            entry.pop("seconds")
    assert followed_manifest == finished_manifest


def _discoveries(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per discovery of the job made from now on in this process (the task's ``Discovery``)."""
    import tasks.discover.task as discover_task

    calls: list[int] = []
    real = discover_task.Discovery

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(discover_task, "Discovery", counted)
    return calls


@pytest.mark.parametrize("touched", [False, True], ids=["incremental", "capture-changed-after-its-row"])
def test_snapshots_and_the_end_come_from_the_folds_unless_a_processed_rows_capture_changed(
    touched: bool, template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No discovery while following, none at the end: the folds kept open answer both. A capture that changes after
    its row was processed cannot be folded again: the end is then the full pass (one discovery), equal all the same."""
    discoveries = _discoveries(monkeypatch)
    job = tmp_path / "job"
    producer = Producer(template, job, rows_per_second=12, interrupt_after=12)  # paused mid-job
    run_dir = tmp_path / "out" / "j" / "runs" / "inc"
    watcher = Watcher(run_dir)
    mid_job: list[dict[str, Any]] = []

    def produce() -> None:
        producer.run()
        live = watcher.until(lambda live: live["rows"] + live["failures"] >= 12 and live["unhealthy_share"] is not None)
        mid_job.append({"live": live, "scores": (run_dir / "scores.json").exists(), "discoveries": len(discoveries)})
        if touched:  # a rollout whose row the follow processed gains a capture line
            done = next(r for i, r in enumerate(producer.rollouts) if i in producer.completed and r.rollout_id and r.capture)
            with (job / "model-calls" / f"{done.rollout_id}.capture.jsonl").open("ab") as capture:
                capture.write(done.capture[-1])
        producer.resume().wait()

    threading.Thread(target=produce, daemon=True).start()
    try:
        state = stage_flow(StageParams(**_job_args(job, tmp_path / "out"), run_id="inc", **FOLLOW), return_state=True)
    finally:
        watcher.stop()
    result = state.result()
    assert result["follow_ended"] == "aggregate_metrics"
    (snapshot,) = mid_job
    assert snapshot == {"live": snapshot["live"], "scores": True, "discoveries": 0}  # a snapshot of the folds, mid-job
    assert len(discoveries) == (1 if touched else 0)
    post_hoc = run_stage(**_job_args(job, tmp_path / "post"), run_id="inc")
    assert _outputs(local_path(result["run_dir"])) == _outputs(local_path(post_hoc["run_dir"]))


def test_a_shard_that_appears_after_rows_were_folded_ends_by_the_full_pass_equal_to_post_hoc(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A glob's second shard appears once the first shard's rows are folded as a one-file job's: the folds cannot
    stand (the rows' keys and output lines change), so the end is the full pass, and the outputs a post-hoc run's."""
    discoveries = _discoveries(monkeypatch)
    job = tmp_path / "job"
    producer = Producer(template, job, rows_per_second=16, shards=2, interrupt_after=2)
    producer.run()  # two rows of task 0: the first shard's file only
    watcher = Watcher(tmp_path / "out" / "j" / "runs" / "s")

    def resume() -> None:
        watcher.until(lambda live: live["rows"] == 2 and live["unhealthy_share"] is not None)  # folded, as a one-file job's
        producer.resume()

    threading.Thread(target=resume, daemon=True).start()
    args = {**_job_args(job, tmp_path / "out"), "rollouts": str(job / "rollouts-chunk*.jsonl")}
    try:
        result = stage_flow(StageParams(**args, run_id="s", **FOLLOW))
    finally:
        watcher.stop()
    producer.wait()
    assert sorted(p.name for p in job.glob("rollouts-chunk?.jsonl")) == ["rollouts-chunk0.jsonl", "rollouts-chunk1.jsonl"]
    assert result["follow_ended"] == "all_answered"
    assert len(discoveries) == 1
    post_hoc = run_stage(**{**args, "output": str(tmp_path / "post")}, run_id="s")
    assert _outputs(local_path(result["run_dir"])) == _outputs(local_path(post_hoc["run_dir"]))


def test_a_gate_breach_stops_the_follow_and_keeps_the_run(template: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job"
    producer = Producer(template, job, rows_per_second=8, interrupt_after=12).start()  # paused mid-job until the follow stops
    gate = ["--gate", "min_key_metric.mean/reward=2", "--gate-min-rollouts", "4", "--stop-on-breach"]
    code = main([*_argv(job, tmp_path / "out"), "--job-id", "j", "--run-id", "r", "--follow", "--snapshot-every", "0.5", *gate])
    assert code == 3
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("evidence-stage: quality gate failed: min_key_metric.mean/reward"), line
    assert line.endswith("--resume r"), line
    run = tmp_path / "out" / "j" / "runs" / "r"
    live = orjson.loads((run / "live.json").read_bytes())
    assert live["gate_breached"]
    assert not live["done"]
    assert 4 <= live["rows"] <= 12
    assert not (run / "_SUCCESS").exists()
    assert any((run / "attempts").rglob("*.seg"))  # kept for the resume
    events = events_of("evidence-stage.run.j.r", 2, names="evidence-stage.job.")
    snapshots = [e.payload for e in events if e.event == JOB_SNAPSHOT]
    (breach,) = [e.payload for e in events if e.event == JOB_GATE_BREACHED]
    assert snapshots
    assert breach["reason"].startswith("quality gate failed: min_key_metric.mean/reward")
    assert breach["counts"]["rows"] == live["rows"]
    producer.wait()
    producer.resume().wait()


def test_a_follow_killed_mid_job_is_resumed_without_reprocessing_its_rows(
    template: Path, tmp_path: Path, prefect_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = tmp_path / "job"
    run = tmp_path / "out" / "j" / "runs" / "k"
    watcher = Watcher(run)
    process = _start(
        [*_argv(job, tmp_path / "out"), "--job-id", "j", "--run-id", "k", "--follow", "--snapshot-every", "0.5"], prefect_server
    )
    assert _claimed(process) == "k"  # the follow waits for a job that has not started yet
    producer = Producer(template, job, rows_per_second=8, interrupt_after=10).start()  # paused mid-job
    try:
        watcher.until(lambda live: live["rows"] >= 4, timeout=120)
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # kill -9 mid-job
        process.communicate(timeout=60)
        watcher.stop()
    assert not (run / "_SUCCESS").exists()
    before = {p.name for p in run.glob("attempts/main/*.seg")}
    assert before
    covered = {line for name in before for line in range(int(name[:9]), int(name[10:19]) + 1)}
    producer.wait()
    producer.resume()
    discoveries = _discoveries(monkeypatch)
    result = run_stage(**_job_args(job, tmp_path / "out"), resume="k", keep_parts=True, **FOLLOW)
    producer.wait()
    assert result["counts"]["rows"]["main"] == 24
    assert not discoveries  # the resumed follow's folds start over from its first look: the end needs no discovery
    post_hoc = run_stage(**_job_args(job, tmp_path / "post"), run_id="k")
    assert _outputs(run) == _outputs(local_path(post_hoc["run_dir"]))
    after = {p.name for p in run.glob("attempts/main/*.seg")}
    assert before <= after
    redone = {line for name in after - before for line in range(int(name[:9]), int(name[10:19]) + 1)} & covered
    assert not redone, f"rows processed before the kill were processed again: lines {sorted(redone)}"


def test_a_rollouts_file_truncated_while_followed_stops_the_follow_in_one_line(
    template: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job"
    producer = Producer(template, job, rows_per_second=8, interrupt_after=8)  # paused mid-job
    run = tmp_path / "out" / "j" / "runs" / "t"
    watcher = Watcher(run)

    def truncate() -> None:
        watcher.until(lambda live: live["rows"] >= 2)
        producer.wait()  # paused: no row lands after the cut, so the file is read at 0 bytes
        producer.truncate(0)

    producer.start()
    threading.Thread(target=truncate, daemon=True).start()
    try:
        code = main([*_argv(job, tmp_path / "out"), "--job-id", "j", "--run-id", "t", "--follow", "--snapshot-every", "0.5"])
    finally:
        watcher.stop()
    line = _error_line(code, capsys)
    assert line.startswith(f"evidence-stage: error: {job / 'rollouts.jsonl'} was truncated while followed ("), line
    assert line.endswith(" 0 now): the run is kept; start a new run once the job is over"), line
    assert (run / "params.json").exists()
    assert not (run / "_SUCCESS").exists()


@pytest.mark.parametrize("written", [False, True], ids=["no-rollouts-file", "empty-rollouts-file"])
def test_a_job_that_idles_out_without_a_row_ends_in_one_line_and_keeps_no_run(
    written: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job"
    if written:  # the producer started the files, then never finished a rollout
        (job / "model-calls").mkdir(parents=True)
        (job / "rollouts.jsonl").touch()
        (job / "rollouts_failures.jsonl").touch()
    code = main(
        [*_argv(job, tmp_path / "out"), "--job-id", "j", "--run-id", "n", "--follow", "--snapshot-every", "0.5", "--idle-timeout", "1"]
    )
    line = _error_line(code, capsys)
    assert line.startswith(f"evidence-stage: error: no rollouts ever appeared in file://{job / 'rollouts.jsonl'} in "), line
    assert line.endswith(" s of following (ended: idle_timeout): nothing to run (the run was not kept)"), line
    assert not (tmp_path / "out" / "j" / "runs" / "n").exists()  # as a post-hoc run of an empty job writes nothing


def test_a_resumed_follow_that_idles_out_without_a_row_keeps_its_run(
    tmp_path: Path, prefect_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job"
    argv = [*_argv(job, tmp_path / "out"), "--job-id", "j", "--follow", "--snapshot-every", "0.5"]
    process = _start([*argv, "--run-id", "k"], prefect_server)
    assert _claimed(process) == "k"  # waiting for a job that has not started
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate(timeout=60)
    line = _error_line(main([*argv, "--resume", "k", "--idle-timeout", "1"]), capsys)
    assert line.endswith(" s of following (ended: idle_timeout): nothing to run (the run is kept)"), line
    assert (tmp_path / "out" / "j" / "runs" / "k" / "params.json").exists()
