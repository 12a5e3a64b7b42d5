"""A replay of NeMo Gym 0.7.0's producer, for the follow mode's tests and benchmarks.

``gym eval run`` with observability on writes a job folder over time (measured on real 0.7.0
jobs, ``../shared/FIELD_NOTES.md``): ``<stem>_materialized_inputs.jsonl`` first (every rollout it
will dispatch) and an empty ``<stem>_failures.jsonl``; then task by task (a task's repeats
dispatched back to back) each rollout's capture file, cleared before dispatch and growing by one
exchange per model call; each row appended and flushed to ``<stem>.jsonl`` (a failed attempt's to
the sidecar) the moment its rollout completes, out of order within a task; last
``<stem>_aggregate_metrics.json``. ``Producer`` replays a finished job (``tests.jobgen``'s) into a
folder that way, at a set rate, with the oddities of running jobs on request: an interruption
(the in-flight rollouts' captures left without rows) and its resume (their captures cleared and
rewritten), a capture that gains a line after its row, shards that write ``<stem>-chunkK.jsonl``
and no aggregate file, a rollouts file truncated while it is followed.

Usage: python tests/producer.py TEMPLATE_JOB OUT_DIR [--rows-per-second R] [--shards K] [--seed S]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

CAPTURE_SUFFIX = ".capture.jsonl"
MARKER_SUFFIX = ".capture.incomplete"
LINES_PER_ROW = 4
"""Capture-line writes between two rows are paced at this many per row interval."""


@dataclass
class Rollout:
    """One rollout as the producer writes it: its capture, then its rows (a failed attempt's first)."""

    task: int
    rollout_id: str | None
    capture: list[bytes]
    marker: bool
    rows: list[tuple[str, bytes]] = field(default_factory=list)  # (main|failures, line with its newline)


def _lines(data: bytes) -> list[bytes]:
    """Lines with their newlines; a cut last line kept as it is."""
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    return lines + ([parts[-1]] if parts[-1] else [])


def _rollout_id(row: dict[str, object]) -> str | None:
    task, rollout, attempt = row.get("_ng_task_index"), row.get("_ng_rollout_index"), row.get("_ng_attempt_index")
    if not isinstance(task, int) or not isinstance(rollout, int):
        return None
    return f"{task}-{rollout}" + (f"-a{attempt}" if isinstance(attempt, int) and attempt > 0 else "")


def read_template(root: Path) -> tuple[list[Rollout], list[Path]]:
    """A finished job's rollouts in dispatch order (by task, then rollout id), and its capture-folder
    files no row claims (orphans: written first, as an earlier interrupted run would have left them)."""
    captures = root / "model-calls"
    by_id: dict[str, Rollout] = {}
    loose: list[Rollout] = []
    for source, name in (("failures", "rollouts_failures.jsonl"), ("main", "rollouts.jsonl")):
        for line in _lines((root / name).read_bytes()):
            row = orjson.loads(line)
            rollout_id = _rollout_id(row)
            task = row.get("_ng_task_index") if isinstance(row.get("_ng_task_index"), int) else -1
            if rollout_id is None:
                loose.append(Rollout(task, None, [], False, [(source, line)]))
                continue
            if rollout_id not in by_id:
                capture = captures / f"{rollout_id}{CAPTURE_SUFFIX}"
                by_id[rollout_id] = Rollout(
                    task,
                    rollout_id,
                    _lines(capture.read_bytes()) if capture.exists() else [],
                    (captures / f"{rollout_id}{MARKER_SUFFIX}").exists(),
                )
            by_id[rollout_id].rows.append((source, line))
    claimed = {f"{i}{suffix}" for i in by_id for suffix in (CAPTURE_SUFFIX, MARKER_SUFFIX)}
    orphans = sorted(p for p in captures.iterdir() if p.name not in claimed)
    rollouts = sorted(by_id.values(), key=lambda r: (r.task, r.rollout_id or "")) + loose
    return rollouts, orphans


def materialized(rollouts: list[Rollout]) -> list[bytes]:
    """One inventory line per (task, rollout) owed, as Gym's materialized inputs hold them."""
    keys: dict[tuple[int, int], bytes] = {}
    for rollout in rollouts:
        for _, line in rollout.rows:
            row = orjson.loads(line)
            key = (row.get("_ng_task_index"), row.get("_ng_rollout_index"))
            if isinstance(key[0], int) and isinstance(key[1], int):
                entry = {"_ng_task_index": key[0], "_ng_rollout_index": key[1], "agent_ref": row.get("agent_ref")}
                keys.setdefault(key, orjson.dumps(entry) + b"\n")
    return [keys[key] for key in sorted(keys)]


class Producer:
    """Writes a job folder from a template job as ``gym eval run`` would, ``rows_per_second`` rows a second.

    ``interrupt_after``: stop after that many rows, leaving the captures of the task's
    other rollouts written and without rows (``wait()`` returns); ``resume()`` then clears and rewrites them, as a
    resumed ``gym eval run`` does. ``late_capture``: the rollout ids whose capture gains one more
    line after its row. ``shards``: write K chunks ``<stem>-chunkK.jsonl`` (each with its own
    sidecar and materialized inputs, tasks dealt round robin) and no aggregate file.
    """

    def __init__(
        self,
        template: Path,
        out: Path,
        *,
        rows_per_second: float = 50.0,
        seed: int = 0,
        stem: str = "rollouts",
        shards: int = 0,
        interrupt_after: int | None = None,
        late_capture: tuple[str, ...] = (),
        aggregate: bool = True,
    ) -> None:
        self.out = out
        self.captures = out / "model-calls"
        self.interval = 1.0 / rows_per_second
        self.rollouts, self.orphans = read_template(template)
        self.rng = random.Random(seed)
        self.stem = stem
        self.shards = shards
        self.interrupt_after = interrupt_after
        self.late_capture = set(late_capture)
        self.aggregate = aggregate and not shards
        self.rows_written = 0
        self.finished_at: float | None = None  # when the last file was written (the aggregate file, where there is one)
        self._thread: threading.Thread | None = None
        self.completed: set[int] = set()  # indices of the rollouts whose rows are written

    # -- where things go

    def stem_of(self, rollout: Rollout) -> str:
        return f"{self.stem}-chunk{rollout.task % self.shards}" if self.shards else self.stem

    def rollouts_files(self) -> list[Path]:
        stems = [f"{self.stem}-chunk{k}" for k in range(self.shards)] if self.shards else [self.stem]
        return [self.out / f"{stem}.jsonl" for stem in stems]

    @property
    def aggregate_file(self) -> Path:
        return self.out / f"{self.stem}_aggregate_metrics.json"

    # -- running

    def start(self) -> Producer:
        """Write the job on a thread of its own (``wait()`` joins it)."""
        self._thread = threading.Thread(target=self.run, name="producer", daemon=True)
        self._thread.start()
        return self

    def resume(self) -> Producer:
        """Continue an interrupted job on a thread, as ``gym eval run --resume`` does."""
        self.interrupt_after = None
        return self.start()

    def wait(self, timeout: float = 120.0) -> None:
        assert self._thread is not None
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the producer did not finish in time"

    def run(self) -> None:
        """Write (or continue writing) the job; returns at its end or at the interruption."""
        self.captures.mkdir(parents=True, exist_ok=True)
        if not self.rows_written:
            self._begin()
        for step in self._steps():
            step()
            if self.interrupt_after is not None and self.rows_written >= self.interrupt_after:
                return
        if self.aggregate:
            time.sleep(self.interval)
            _append(self.aggregate_file, orjson.dumps([{"agent_ref": "replayed", "rows": self.rows_written}]) + b"\n", fresh=True)
        self.finished_at = time.time()

    def _begin(self) -> None:
        for orphan in self.orphans:
            shutil.copyfile(orphan, self.captures / orphan.name)
        groups: dict[str, list[Rollout]] = {}
        for rollout in self.rollouts:
            groups.setdefault(self.stem_of(rollout), []).append(rollout)
        for stem, group in sorted(groups.items()):
            _append(self.out / f"{stem}_materialized_inputs.jsonl", b"".join(materialized(group)), fresh=True)
            _append(self.out / f"{stem}_failures.jsonl", b"", fresh=True)

    def _steps(self) -> Iterator[Callable[[], None]]:
        """Task by task: the task's captures cleared, their lines interleaved, then its rows out of order."""
        tasks: dict[int, list[int]] = {}
        for index, rollout in enumerate(self.rollouts):
            if index not in self.completed:
                tasks.setdefault(rollout.task, []).append(index)
        for indices in tasks.values():
            yield from self._task(indices)

    def _task(self, indices: list[int]) -> Iterator[Callable[[], None]]:
        running = [self.rollouts[i] for i in indices]
        for rollout in running:
            if rollout.rollout_id is not None and (rollout.capture or rollout.marker):
                yield self._paced(lambda r=rollout: _append(self._capture(r), b"", fresh=True), LINES_PER_ROW)
        for k in range(max((len(r.capture) for r in running), default=0)):
            for rollout in running:
                if k < len(rollout.capture):
                    yield self._paced(lambda r=rollout, k=k: _append(self._capture(r), r.capture[k]), LINES_PER_ROW)
        order = list(indices)
        self.rng.shuffle(order)
        for index in order:
            yield self._paced(lambda i=index: self._complete(i), 1)

    def _paced(self, write: Callable[[], None], per_row: int) -> Callable[[], None]:
        def step() -> None:
            write()
            time.sleep(self.interval / per_row)

        return step

    def _capture(self, rollout: Rollout) -> Path:
        return self.captures / f"{rollout.rollout_id}{CAPTURE_SUFFIX}"

    def _complete(self, index: int) -> None:
        rollout = self.rollouts[index]
        if rollout.marker:
            (self.captures / f"{rollout.rollout_id}{MARKER_SUFFIX}").write_bytes(b"")
        for source, line in rollout.rows:
            name = f"{self.stem_of(rollout)}{'_failures' if source == 'failures' else ''}.jsonl"
            _append(self.out / name, line)
        self.completed.add(index)
        self.rows_written += 1
        if rollout.rollout_id in self.late_capture and rollout.capture:
            time.sleep(self.interval / LINES_PER_ROW)
            _append(self._capture(rollout), rollout.capture[-1] if rollout.capture[-1].endswith(b"\n") else rollout.capture[0])

    # -- damage

    def truncate(self, keep_bytes: int = 0) -> None:
        """Cut the (first) rollouts file to its first ``keep_bytes`` bytes, as a careless rewrite would."""
        with open(self.rollouts_files()[0], "r+b") as f:
            f.truncate(keep_bytes)


def _append(path: Path, data: bytes, *, fresh: bool = False) -> None:
    """One write, flushed: a row lands whole, as Gym's ``write`` + ``flush`` of one line does."""
    with open(path, "wb" if fresh else "ab") as f:
        f.write(data)
        f.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Replay a finished job into OUT_DIR as NeMo Gym 0.7.0 writes it.")
    parser.add_argument("template", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--rows-per-second", type=float, default=20.0)
    parser.add_argument("--shards", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    Producer(args.template, args.out, rows_per_second=args.rows_per_second, shards=args.shards, seed=args.seed).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
