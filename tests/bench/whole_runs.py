"""The fuzz campaign over whole runs: hostile values where the code around the engine reads rows.

The engine's contract (no row fails a run) is fuzzed by ``tests/mutation.py``. This half puts the
hostile shapes in the fields the code *around* the engine keys, groups or sums on (discovery and
its accounting, the reduce's folds, the tables, the viewer, ``select`` and ``compare``'s
pairing), in main rows, failures-sidecar lines and materialized-inputs lines, and runs the stage
on the job as a user would: ``evidence-stage run``, then ``tables --replace``, ``report``,
``select`` and ``compare`` against a clean run of the same seed rows. Every command must end with its normal
status (a run 0 or 3, the gate's), and every non-blank line must be accounted for in the
manifest: one attempt or one skipped line.

Called by ``tests/bench/fuzz_campaign.py --runs N``; the commands talk to one Prefect server, the
one ``PREFECT_API_URL`` names or else one the campaign starts (``prefect_test_harness``), so a
run does not pay for a temporary one.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from evidence import dumps
from tests.mutation import Mutator, Seed, load_seeds

REPO = Path(__file__).resolve().parents[2]
CLI = str(REPO / ".venv" / "bin" / "evidence-stage")
COMMAND_TIMEOUT = 900


def _nested(depth: int, leaf: bytes = b"0", *, objects: bool = False) -> bytes:
    if objects:
        return b'{"a":' * depth + leaf + b"}" * depth
    return b"[" * depth + leaf + b"]" * depth


# shape -> JSON texts, written into a line as they are (NaN, wide integers and \\ud800 escapes
# are text a line can hold and a writer cannot produce). Depths are the value's own; in a row's
# field it sits one level deeper (orjson writes 255 levels and reads 1,024; Python's repr,
# json.dumps and pickle stop near 1,000).
SHAPES: dict[str, tuple[bytes, ...]] = {
    "deep_255": (_nested(254), _nested(255), _nested(256), _nested(300, objects=True)),
    "deep_1000": (_nested(990), _nested(1022, objects=True), _nested(1100)),
    "huge_int": (b"18446744073709551616", b"-9223372036854775809", b"1" + b"0" * 400, b"1" + b"0" * 5000),
    "nan_text": (b"NaN", b"Infinity", b"-Infinity", b"1e400"),
    "non_string_key": (b"0", b"1.5", b"true", b"null", b'{"1":1,"true":2,"null":3}', b'{"a":1,"a":[2]}'),
    "lone_surrogate": (b'"\\ud800"', b'"a\\udfffb"', b'{"\\ud800":1}'),
    "string_10mb": (b'"' + b"x" * (10 * 2**20) + b'"',),
    "wrong_type": (b"[]", b"{}", b'[1,"a"]', b'{"name":1}', b'""', b'"x"', b"-1", b"false"),
}
BIG_PER_RUN = 2  # 10 MB strings per job: enough to meet them, few enough for a shared machine
# Fields the code around the engine keys, groups, sums or pairs on ("a.b": member b of object a).
FIELDS = (
    "_ng_task_index",
    "_ng_rollout_index",
    "_ng_rollout_id",
    "_ng_attempt_index",
    "agent_ref",
    "agent_ref.name",
    "_ng_environment_server",
    "reward",
    "resolved",
    "stage_index",
    "mask_sample",
    "_ng_failure_class",
    "ng_perf.num_turns",
    "ng_perf.total_latency_ms",
)
ACCOUNTED_FIELDS = ("_ng_task_index", "_ng_rollout_index", "_ng_failure_class")
# Fields of a capture record the collected row carries into rollouts.jsonl, which the tables,
# the viewer, select and compare read back.
CAPTURE_FIELDS = ("response", "request", "model_ref", "latency_ms", "status_code", "model_call_id")
_MARK = "@@hostile-value@@"


class JobMaker:
    """One job of hostile lines (and the clean job of the same seed rows), from one ``Random``."""

    def __init__(self, rng: random.Random, seeds: list[Seed]) -> None:
        self.rng = rng
        self.seeds = seeds
        self.mutator = Mutator(rng)
        self.big = 0
        self.tried: Counter[str] = Counter()  # "where shape field"

    def hostile(self, where: str, fields: tuple[str, ...]) -> tuple[str, str, bytes]:
        """(shape, field, JSON text): a shape drawn for a field (10 MB strings at most BIG_PER_RUN a job)."""
        shapes = [name for name in SHAPES if name != "string_10mb" or self.big < BIG_PER_RUN]
        shape = self.rng.choice(shapes)
        self.big += shape == "string_10mb"
        field = self.rng.choice(fields)
        self.tried[f"{where} {shape} {field}"] += 1
        return shape, field, self.rng.choice(SHAPES[shape])

    def place(self, line: bytes, where: str, fields: tuple[str, ...], count: int) -> bytes:
        """``line`` with ``count`` of ``fields`` set to hostile values, written as text."""
        row = orjson.loads(line)
        texts = []
        for _ in range(count):
            _, field, text = self.hostile(where, fields)
            parent, _, name = field.rpartition(".")
            holder = row
            if parent:
                if not isinstance(row.get(parent), dict):
                    row[parent] = {}
                holder = row[parent]
            holder[name] = f"{_MARK}{len(texts)}"
            texts.append(text)
        out = dumps(row)
        for index, text in enumerate(texts):
            out = out.replace(f'"{_MARK}{index}"'.encode(), text, 1)
        return out

    def job(self, folder: Path, rows: int) -> tuple[Path, Path, dict[str, int]]:
        """Write the hostile job and its clean twin under ``folder``; their rollouts files and line counts."""
        chosen = [self.rng.choice(self.seeds) for _ in range(rows)]
        main = [seed for seed in chosen if b'"_ng_failure_class"' not in seed.row]
        failures = [seed for seed in chosen if b'"_ng_failure_class"' in seed.row]
        hostile, clean = folder / "hostile", folder / "clean"
        lines: dict[str, list[bytes]] = {"rollouts": [], "rollouts_failures": [], "rollouts_materialized_inputs": []}
        for seed in main:
            roll = self.rng.random()
            if roll < 0.6:
                lines["rollouts"].append(self.place(seed.row, "main", FIELDS, self.rng.randint(1, 2)))
            elif roll < 0.85:
                lines["rollouts"].append(self.mutator.row(seed.row))
            else:
                lines["rollouts"].append(seed.row)
        for seed in failures:
            hit = self.rng.random() < 0.7
            lines["rollouts_failures"].append(self.place(seed.row, "failures", FIELDS, self.rng.randint(1, 2)) if hit else seed.row)
        for seed in chosen:
            owed = dumps({key: value for key, value in orjson.loads(seed.row).items() if key in ACCOUNTED_FIELDS[:2]})
            hit = self.rng.random() < 0.3
            lines["rollouts_materialized_inputs"].append(self.place(owed, "materialized", ACCOUNTED_FIELDS[:2], 1) if hit else owed)
        _write_job(hostile, lines, chosen, self.capture)
        _write_job(clean, {"rollouts": [seed.row for seed in main], "rollouts_failures": [seed.row for seed in failures]}, chosen, None)
        counts = {name: len(text) for name, text in lines.items()}
        return hostile, clean, counts

    def capture(self, jsonl: bytes) -> bytes:
        """A capture file with hostile values in one record (two in ten files), else as it was."""
        lines = jsonl.split(b"\n")
        records = [k for k, line in enumerate(lines) if line.startswith(b"{")]
        if not records or self.rng.random() >= 0.2:
            return jsonl
        k = self.rng.choice(records)
        try:
            lines[k] = self.place(lines[k], "capture", CAPTURE_FIELDS, 1)
        except orjson.JSONDecodeError:
            return jsonl
        return b"\n".join(lines)


def _write_job(folder: Path, lines: dict[str, list[bytes]], seeds: list[Seed], capture: Callable[[bytes], bytes] | None) -> None:
    calls = folder / "model-calls"
    calls.mkdir(parents=True)
    for name, text in lines.items():
        (folder / f"{name}.jsonl").write_bytes(b"".join(line + b"\n" for line in text))
    for seed in seeds:
        rollout_id = _capture_name(seed.row)
        if seed.capture is None or rollout_id is None:
            continue
        if seed.capture.jsonl is not None and not (calls / f"{rollout_id}.capture.jsonl").exists():
            jsonl = seed.capture.jsonl if capture is None else capture(seed.capture.jsonl)
            (calls / f"{rollout_id}.capture.jsonl").write_bytes(jsonl)
        if seed.capture.incomplete:
            (calls / f"{rollout_id}.capture.incomplete").touch()


def _capture_name(line: bytes) -> str | None:
    from evidence import capture_file_id

    try:
        return capture_file_id(orjson.loads(line))
    except Exception:  # noqa: BLE001 - a seed whose id names no file
        return None


def _command(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    """(exit status, the last line of stderr that says something)."""
    done = subprocess.run([CLI, *argv], capture_output=True, text=True, env=env, timeout=COMMAND_TIMEOUT, check=False)
    said = [line for line in done.stderr.splitlines() if "error" in line.lower()] or done.stderr.splitlines() or [""]
    return done.returncode, said[-1][:300]


def _run_dir(output: Path) -> Path | None:
    found = sorted(output.glob("*/runs/*"))
    return found[-1] if found else None


def _accounted(run_dir: Path, job: Path) -> str | None:
    """None when every non-blank line of the job's rollouts and sidecar is one attempt or one skipped line."""
    manifest = orjson.loads((run_dir / "manifest.json").read_bytes())
    lines = sum(
        1 for name in ("rollouts.jsonl", "rollouts_failures.jsonl") for line in (job / name).read_bytes().splitlines() if line.strip()
    )
    counts = manifest["counts"]
    if counts["attempts"] + counts["skipped_lines"] != lines:
        return f"{lines} lines, {counts['attempts']} attempts and {counts['skipped_lines']} skipped lines"
    if len(manifest["attempts"]) != counts["attempts"]:
        return "manifest attempts differ from its count"
    return None


class _Record:
    """What the campaign has seen: lines, outcomes per command, the first message of each failure."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.outcomes: Counter[str] = Counter()
        self.failures: dict[str, str] = {}
        self.statuses: Counter[str] = Counter()
        self.lines: Counter[str] = Counter()
        self.tried: Counter[str] = Counter()
        self.runs: list[dict[str, Any]] = []

    def step(self, run: dict[str, Any], name: str, argv: list[str], ok: Callable[[int], bool] = lambda rc: rc == 0) -> bool:
        """Run one command; whether it ended as it should."""
        rc, said = _command(argv, self.env)
        good = ok(rc)
        self.outcomes[f"{name} {'ok' if good else 'FAILED'}"] += 1
        run[name] = rc
        if not good:
            self.failures.setdefault(f"{name} exit {rc}", f"run {run['number']}: {said}")
        return good

    def check(self, run: dict[str, Any], name: str, problem: str | None) -> None:
        self.outcomes[f"{name} {'ok' if problem is None else 'FAILED'}"] += 1
        if problem is not None:
            self.failures.setdefault(name, f"run {run['number']}: {problem}")


def _finished(rc: int) -> bool:
    return rc in (0, 3)  # 3: the run was written and its quality gate failed


def _one_run(record: _Record, maker: JobMaker, folder: Path, number: int, rows: int) -> None:
    """One hostile job and its clean twin through every command."""
    hostile, clean, counts = maker.job(folder / "job", rows)
    record.lines.update(counts)
    run: dict[str, Any] = {"number": number, "lines": counts}
    record.runs.append(run)
    out = folder / "out"
    hostile_ok = record.step(run, "run", _run_argv(hostile, out / "hostile"), _finished)
    record.step(run, "run_clean", _run_argv(clean, out / "clean"), _finished)
    record.tried.update(maker.tried)
    run_dir, clean_dir = _run_dir(out / "hostile"), _run_dir(out / "clean")
    if not hostile_ok or run_dir is None:
        return
    counts_written = orjson.loads((run_dir / "manifest.json").read_bytes())["counts"]
    record.statuses.update(counts_written["by_status"])
    record.statuses["skipped_lines"] += counts_written["skipped_lines"]
    run["by_status"], run["skipped_lines"] = counts_written["by_status"], counts_written["skipped_lines"]
    record.check(run, "accounted", _accounted(run_dir, hostile))
    record.step(run, "tables", ["tables", "--replace", str(run_dir)])
    record.step(run, "report", ["report", str(run_dir)])
    for verdict in ("healthy", "unhealthy", "unobserved"):
        argv = ["select", str(run_dir), "--verdict", verdict, "--min-reward", "0", "--output", str(out / f"{verdict}.jsonl")]
        record.step(run, f"select {verdict}", argv)
    if clean_dir is not None:
        record.step(run, "compare", ["compare", str(clean_dir), str(run_dir), "--output", str(out / "compare")])
        record.step(run, "compare_reversed", ["compare", str(run_dir), str(clean_dir), "--output", str(out / "compare-reversed")])


def campaign(runs: int, rows: int, seed: int) -> dict[str, Any]:
    """``runs`` whole runs of ``rows`` lines each; the campaign's record."""
    rng = random.Random(seed)
    seeds = load_seeds()
    started = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="evidence-stage-fuzz-runs-"))
    try:
        with _prefect_server() as api_url:
            record = _Record({**os.environ, "PREFECT_API_URL": api_url, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"})
            for number in range(1, runs + 1):
                _one_run(record, JobMaker(rng, seeds), root / f"run-{number}", number, rows)
                shutil.rmtree(root / f"run-{number}", ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "runs": runs,
        "rows": rows,
        "seed": seed,
        "seconds": round(time.perf_counter() - started, 1),
        "lines": dict(record.lines),
        "statuses": dict(record.statuses),
        "outcomes": dict(sorted(record.outcomes.items())),
        "failures": record.failures,
        "per_run": record.runs,
        "tried": dict(sorted(record.tried.items())),
    }


@contextmanager
def _prefect_server() -> Iterator[str]:
    """The API URL of the server in ``PREFECT_API_URL``, else of one started for the campaign."""
    if os.environ.get("PREFECT_API_URL"):
        yield os.environ["PREFECT_API_URL"]
        return
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield str(PREFECT_API_URL.value())


def _run_argv(job: Path, output: Path) -> list[str]:
    return ["run", "--rollouts", str(job / "rollouts.jsonl"), "--capture-dir", str(job / "model-calls"), "--output", str(output)]


if __name__ == "__main__":
    sys.exit("run tests/bench/fuzz_campaign.py --runs N")
