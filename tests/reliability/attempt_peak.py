"""Process one attempt the way a worker does, in this process, and print its memory figures.

Usage: python -m tests.reliability.attempt_peak ROLLOUTS CAPTURE_DIR LINE [REPEAT]
Prints {"line", "repeat", "row_bytes", "capture_bytes", "baseline_mib", "peak_mib",
"growth_mib", "bound_mib"}: RSS once everything is imported, this process's peak (``VmHWM``)
after processing the attempt ``REPEAT`` times (default 1: a leak shows as a peak that grows
with the repeats), and the engine's bound, 4 x (row + capture) + 150 MB (README, guarantee 6).
"""

from __future__ import annotations

import json
import mmap
import multiprocessing
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import orjson
import psutil

from tests.reliability.peak_rss import own_peak_rss_kib

BOUND_BASE_MIB = 150
MEASURE_TIMEOUT_S = 300


def measure(job: Path, line: int, repeat: int = 1) -> dict[str, float]:
    """This module's figures for ``line`` of ``job``'s rollouts, from a fresh interpreter (so its
    peak is the attempt's alone)."""
    command = [
        sys.executable,
        "-m",
        "tests.reliability.attempt_peak",
        str(job / "rollouts.jsonl"),
        str(job / "model-calls"),
        str(line),
        str(repeat),
    ]
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(command, cwd=repo, capture_output=True, text=True, check=True, timeout=MEASURE_TIMEOUT_S)
    return json.loads(done.stdout)


def _row(rollouts: Path, line: int) -> bytes:
    """Line ``line`` alone, found through a memory map (the other lines never become objects)."""
    with rollouts.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as view:
        start = 0
        for _ in range(line - 1):
            start = view.find(b"\n", start) + 1
            if start == 0:
                raise SystemExit(f"no line {line} in {rollouts}")
        end = view.find(b"\n", start)
        return view[start : end if end >= 0 else len(view)]


def _row_facts(rollouts: str, line: int) -> tuple[int, str | None]:
    """The row's length and capture id (run in a child process by ``main``)."""
    from evidence import capture_file_id

    row = _row(Path(rollouts), line)
    return len(row), capture_file_id(orjson.loads(row))


def main(rollouts: str, capture_dir: str, line: str, repeat: str = "1") -> int:
    from evidence import AttemptConfig, AttemptInputs, AttemptPart, CaptureFiles, Exporter, encode_part, process_attempt

    # Parsed in a child: a long row's objects would raise this process's peak, and leave memory
    # with its allocator, before the attempt being measured begins.
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as child:
        row_bytes, rollout_id = child.submit(_row_facts, rollouts, int(line)).result()
    capture_path = Path(capture_dir) / f"{rollout_id}.capture.jsonl"
    config = AttemptConfig("bench", "1.0.0", Exporter(name="evidence-stage", version="0"), (), "rollouts.jsonl")
    baseline = psutil.Process().memory_info().rss / 2**20
    capture_bytes = capture_path.stat().st_size if capture_path.exists() else 0
    for _ in range(int(repeat)):
        capture = CaptureFiles(jsonl=capture_path.read_bytes(), incomplete=False) if capture_path.exists() else None
        inputs = AttemptInputs(_row(Path(rollouts), int(line)), capture)
        del capture  # the engine holds the only references to its inputs
        part = encode_part(AttemptPart("f", 0.0, process_attempt(inputs, config, main_line=1)))
        del inputs, part  # what a worker writes it drops
    peak = own_peak_rss_kib() / 2**10
    figures = {
        "line": int(line),
        "repeat": int(repeat),
        "row_bytes": row_bytes,
        "capture_bytes": capture_bytes,
        "baseline_mib": round(baseline, 1),
        "peak_mib": round(peak, 1),
        "growth_mib": round(peak - baseline, 1),
        "bound_mib": round((4 * (row_bytes + capture_bytes)) / 2**20 + BOUND_BASE_MIB, 1),
    }
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
