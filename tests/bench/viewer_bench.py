"""Benchmark: the rollout viewer of a 10,000-rollout run, written and opened in Chromium.

Usage (from the repository root):

    .venv/bin/python tests/bench/viewer_bench.py [--run-dir DIR] [--rollouts 10000] [--runs 3] [--api-url URL]

Without ``--run-dir`` it generates a job (``tests/jobgen.py``'s shape: ``--rollouts``,
``--calls-per-rollout 4``, ``--history-bytes 300``; cached under ``--jobs-root``) and runs the
stage on it, which writes ``viewer/`` itself. Then it measures:

* ``write``: ``build_from_outputs`` over the finished run again (tables and viewer rebuilt from its
  outputs, as ``evidence-stage tables --replace`` does; best of ``--runs``), and the viewer's sizes:
  ``index.html``, the detail files (count, total, largest);
* ``browser``: ``viewer/index.html`` opened from ``file://`` in a fresh headless Chromium
  (``tests/browser/cdp.py``), ``--runs`` times: first paint and first contentful paint (the
  Paint Timing API), the table drawn (the script's ``data-ready``), filtering to one verdict,
  and opening a rollout (its detail file loaded and drawn), in milliseconds. The table is drawn
  by the script at the end of the page: ``table_drawn_ms`` is its ``evidence-viewer-ready`` mark.

Prints one JSON line per measurement. The browser's figures are from the page's own clock
(``performance.now()``), so the DevTools round trips do not count in them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.harness import (
    add_job_arguments,
    add_server_argument,
    cli_env,
    emit,
    ensure_job,
    job_rollouts,
    job_run_args,
    prefect_server,
    timed,
)

# the page's own clock: when its first paints happened
PAINTS = "JSON.stringify(Object.fromEntries(performance.getEntriesByType('paint').map(e => [e.name, e.startTime])))"


def stage_run(args: argparse.Namespace, scratch: Path) -> Path:
    job, generated_s = ensure_job(args)
    emit({"what": "job", "path": str(job), "generated_s": generated_s})
    output = scratch / "out"
    with prefect_server(args.api_url, scratch / "prefect-home") as server:
        seconds = timed(
            job_run_args(str(job_rollouts(job)), str(job / "model-calls"), str(output), "bench-viewer"), cli_env(server.api_url)
        )
    emit({"what": "stage run", "seconds": round(seconds, 2)})
    return output / "bench" / "runs" / "bench-viewer"


def measure_write(run_dir: Path, runs: int) -> None:
    from tasks.storage import Location
    from tasks.tables.build import build_from_outputs

    seconds = []
    for _ in range(max(runs, 1)):
        started = time.perf_counter()
        build_from_outputs(Location(str(run_dir)), "bench", "bench-viewer")
        seconds.append(time.perf_counter() - started)
    sizes = {str(path.relative_to(run_dir)): path.stat().st_size for path in (run_dir / "viewer").iterdir()}
    details = [size for name, size in sizes.items() if name.endswith(".js")]
    emit(
        {
            "what": "rebuild_from_outputs",
            "best_s": round(min(seconds), 3),
            "runs_s": [round(s, 3) for s in seconds],
            "rollouts": sum(1 for _ in (run_dir / "rollouts.jsonl").open("rb")),
            "index_html_bytes": sizes["viewer/index.html"],
            "detail_files": len(details),
            "detail_bytes": sum(details),
            "largest_detail_bytes": max(details, default=0),
            "total_bytes": sum(sizes.values()),
            "rollouts_jsonl_bytes": (run_dir / "rollouts.jsonl").stat().st_size,
        }
    )


def measure_browser(run_dir: Path, runs: int, scratch: Path) -> None:
    from tests.browser.cdp import Chromium

    page_url = (run_dir / "viewer" / "index.html").as_uri()
    results: list[dict[str, Any]] = []
    for number in range(runs):
        with Chromium(scratch / f"profile-{number}") as browser:
            page = browser.page(page_url)
            page.wait("document.documentElement.dataset.ready && performance.getEntriesByName('first-contentful-paint').length")
            paints = page.evaluate(PAINTS)
            ready = page.evaluate("performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
            drawn = page.evaluate("performance.getEntriesByName('evidence-viewer-ready')[0].startTime")
            filtered = page.evaluate(
                "new Promise(done => { const t0 = performance.now();"
                " addEventListener('hashchange', () => done(performance.now() - t0), {once: true});"  # after the page's own listener
                " const s = document.querySelector('#filter-verdict'); s.value = s.options[1].value;"
                " s.dispatchEvent(new Event('change')); })"
            )
            line = page.evaluate("document.querySelector('#rollouts tbody tr').dataset.line")
            page.evaluate(f"(window.__t0 = performance.now(), location.hash = '#line={int(line)}', 0)")
            page.wait("document.getElementById('section-turns')")
            opened = page.evaluate("performance.now() - window.__t0")
            results.append(
                {
                    "paints_ms": json.loads(paints),
                    "dom_content_loaded_ms": round(ready, 1),
                    "table_drawn_ms": round(drawn, 1),
                    "filter_ms": round(filtered, 1),
                    "open_rollout_ms": round(opened, 1),
                    "errors": page.console_errors(),
                }
            )
    fcp = [r["paints_ms"].get("first-contentful-paint") for r in results]
    emit(
        {
            "what": "chromium",
            "url": page_url,
            "first_contentful_paint_ms": [round(v, 1) if v is not None else None for v in fcp],
            "median_first_contentful_paint_ms": round(statistics.median(v for v in fcp if v is not None), 1)
            if any(v is not None for v in fcp)
            else None,
            "runs": results,
        }
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_job_arguments(parser, 10_000)
    parser.set_defaults(calls_per_rollout=4, history_bytes=300)
    add_server_argument(parser)
    parser.add_argument("--run-dir", type=Path, help="a finished run directory (no job is generated and no stage run)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="evidence-stage-viewer-") as scratch:
        root = Path(scratch)
        run_dir = args.run_dir or stage_run(args, root)
        measure_write(run_dir, args.runs)
        measure_browser(run_dir, args.runs, root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
