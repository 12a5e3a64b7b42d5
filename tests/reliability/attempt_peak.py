"""Process one attempt the way a worker does, in this process, and print its memory figures.

Usage: python -m tests.reliability.attempt_peak ROLLOUTS CAPTURE_DIR LINE
Prints {"line", "row_bytes", "capture_bytes", "baseline_mib", "peak_mib", "growth_mib",
"bound_mib"}: RSS once everything is imported, this process's peak (``VmHWM``) after the
attempt, and the engine's bound, 4 x (row + capture) + 150 MB (DESIGN.md invariant 6).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import orjson
import psutil

from tests.reliability.peak_rss import own_peak_rss_kib

BOUND_BASE_MIB = 150


def _row(rollouts: Path, line: int) -> bytes:
    with rollouts.open("rb") as file:
        for number, raw in enumerate(file, start=1):
            if number == line:
                return raw.rstrip(b"\n")
    raise SystemExit(f"no line {line} in {rollouts}")


def main(rollouts: str, capture_dir: str, line: str) -> int:
    from evidence import AttemptConfig, AttemptPart, CaptureFiles, Exporter, capture_file_id, encode_part, process_attempt

    row = _row(Path(rollouts), int(line))
    rollout_id = capture_file_id(orjson.loads(row))
    capture_path = Path(capture_dir) / f"{rollout_id}.capture.jsonl"
    config = AttemptConfig("bench", "1.0.0", Exporter(name="evidence-stage", version="0"), (), "rollouts.jsonl")
    baseline = psutil.Process().memory_info().rss / 2**20
    capture = CaptureFiles(jsonl=capture_path.read_bytes(), incomplete=False) if capture_path.exists() else None
    capture_bytes = len(capture.jsonl or b"") if capture else 0
    part = encode_part(AttemptPart("f", 0.0, process_attempt(row, capture, config, main_line=1)))
    del capture
    Path(capture_dir).parent.joinpath(".attempt_peak.part").write_bytes(part)
    peak = own_peak_rss_kib() / 2**10
    figures = {
        "line": int(line), "row_bytes": len(row), "capture_bytes": capture_bytes,
        "baseline_mib": round(baseline, 1), "peak_mib": round(peak, 1), "growth_mib": round(peak - baseline, 1),
        "bound_mib": round((4 * (len(row) + capture_bytes)) / 2**20 + BOUND_BASE_MIB, 1),
    }
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
