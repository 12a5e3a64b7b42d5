"""Run the stage once in this process and print its memory figures as JSON (memory tests).

Usage: python -m tests.reliability.peak_rss ROLLOUTS CAPTURE_DIR OUTPUT
Prints {"attempts", "baseline_mib", "peak_mib", "growth_mib"}: RSS once everything is imported,
the process's peak RSS after the run, and their difference (what the run itself needed).

The peak is the kernel's high-water mark of this process's own memory (``VmHWM``), not
``getrusage``'s ``ru_maxrss``: Linux carries the parent's peak into a child across fork and
exec, so a test process of 300 MiB would make every measured run look like 300 MiB.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import psutil


def main(rollouts: str, capture_dir: str, output: str) -> int:
    from flows.params.stage import StageParams
    from flows.stage import stage_flow

    baseline = psutil.Process().memory_info().rss / 2**20
    result = stage_flow(StageParams(rollouts=rollouts, capture_dir=capture_dir, output=output))
    peak = own_peak_rss_kib() / 2**10
    figures = {"attempts": result["counts"]["attempts"], "baseline_mib": round(baseline, 1), "peak_mib": round(peak, 1)}
    figures["growth_mib"] = round(peak - baseline, 1)
    print(json.dumps(figures))
    return 0


def own_peak_rss_kib() -> int:
    """This process's peak resident set size since it started (``VmHWM``, KiB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
