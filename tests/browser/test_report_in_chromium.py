"""A real browser loads report.html from disk: the matrix and verdict counts are in the DOM.

Uses Debian's chromium, headless, with no sandbox, GPU or background networking, and a new
empty profile. Skipped (with the reason) where /usr/bin/chromium is absent; the CI set-up
script installs it. The screenshot is kept in the test's tmp dir and its path is printed.
"""

from __future__ import annotations

import json
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from evidence.capabilities import DIMENSIONS, build_capabilities, capability_digest, histogram_values
from evidence.report import ReportContext, render_report
from evidence.report.tables import capability_words

CHROMIUM = Path("/usr/bin/chromium")
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "samples" / "realistic_job.expected"
# A guard against a hung browser, not a performance assertion.
BROWSER_TIMEOUT_S = 180

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium not installed at /usr/bin/chromium (apt-get install chromium)")


def sample_report(run_dir: Path) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """Write report.html for the realistic sample job; return it with the tables it shows."""
    lines = (SAMPLE / "rollouts.jsonl").read_text(encoding="utf-8").splitlines()
    digests = [capability_digest(json.loads(line)) for line in lines if line.strip()]
    capabilities = build_capabilities(digests)
    summary = json.loads((SAMPLE / "health" / "quality_summary.json").read_text(encoding="utf-8"))
    perf = {"run": json.loads((SAMPLE / "perf_summary_run.json").read_text(encoding="utf-8")), "groups": {}}
    values = histogram_values(digests)
    context = ReportContext(
        job_id="realistic_job-0f0f0f0f",
        run_id="20260101T000000Z-abc123",
        started_at="2026-01-01T00:00:00Z",
        finished_at="2026-01-01T00:00:42Z",
        inputs={"rollouts": "tests/data/samples/realistic_job/rollouts.jsonl"},
        parameters={"session_id": "sample", "agent_version": "1.0.0"},
        quality_summary=summary,
        capabilities=capabilities,
        perf_summary=perf,
        latency_ms=values["latency_ms"],
        tokens_per_turn=values["tokens_per_turn"],
        links=[("Enriched rollouts", "rollouts.jsonl"), ("Capabilities", "capabilities.json")],
    )
    page = run_dir / "report.html"
    page.write_text(render_report(context), encoding="utf-8")
    return page, capabilities, summary


def chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S, check=True)


class _DomReader(HTMLParser):
    """Reads matrix cells (data-dimension) and verdict counts (data-verdict) from the dump."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: dict[tuple[str, str], tuple[str, str]] = {}
        self.verdicts: dict[str, str] = {}
        self._current: dict[str, str | None] | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if "data-dimension" in found or "data-verdict" in found:
            self._current, self._text = found, ""

    def handle_data(self, data: str) -> None:
        if self._current is not None:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if self._current is None or tag not in ("td", "span"):
            return
        attrs, self._current = self._current, None
        if "data-dimension" in attrs:
            self.cells[attrs["data-agent"], attrs["data-dimension"]] = (attrs["data-status"], self._text)
        else:
            self.verdicts[attrs["data-verdict"]] = self._text


def test_chromium_renders_matrix_and_verdicts(tmp_path: Path) -> None:
    page, capabilities, summary = sample_report(tmp_path)
    dom = chromium(tmp_path / "profile-dom", "--dump-dom", page.as_uri()).stdout
    reader = _DomReader()
    reader.feed(dom)

    expected_cells = {
        (agent, name): (entry["dimensions"][name]["status"], capability_words(entry["dimensions"][name]))
        for agent, entry in capabilities["agents"].items()
        for name in DIMENSIONS
    }
    assert reader.cells == expected_cells
    assert reader.cells["plain_agent", "per_call_metadata"] == ("unavailable", "no")  # words and a CSS marker: no emoji font needed
    assert reader.cells["harness_agent", "semantic_turns"] == ("partial", "75%")
    verdicts = summary["run"]["verdicts"]
    assert reader.verdicts == {name: str(count) for name, count in verdicts.items()}

    screenshot = tmp_path / "report.png"
    chromium(tmp_path / "profile-shot", "--window-size=1280,2400", f"--screenshot={screenshot}", page.as_uri())
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"report screenshot: {screenshot}")


def test_chromium_shows_the_example_job_run_report(tmp_path: Path, prefect_server: str) -> None:
    """The report the stage itself wrote for the bundled example job, read back from the browser."""
    from tests.conftest import EXAMPLE_JOB
    from tests.flows.support import local_path, run_stage

    result = run_stage(
        rollouts=str(EXAMPLE_JOB / "rollouts.jsonl"), capture_dir=str(EXAMPLE_JOB / "model-calls"), output=str(tmp_path / "out")
    )
    run_dir = local_path(result["run_dir"])
    capabilities = json.loads((run_dir / "capabilities.json").read_text(encoding="utf-8"))
    summary = json.loads((run_dir / "health" / "quality_summary.json").read_text(encoding="utf-8"))
    reader = _DomReader()
    reader.feed(chromium(tmp_path / "profile", "--dump-dom", (run_dir / "report.html").as_uri()).stdout)

    assert reader.cells == {
        (agent, name): (entry["dimensions"][name]["status"], capability_words(entry["dimensions"][name]))
        for agent, entry in capabilities["agents"].items()
        for name in DIMENSIONS
    }
    assert reader.verdicts == {name: str(count) for name, count in summary["run"]["verdicts"].items()}
    screenshot = tmp_path / "example-report.png"
    chromium(tmp_path / "profile-shot", "--window-size=1280,2400", f"--screenshot={screenshot}", (run_dir / "report.html").as_uri())
    print(f"example job report screenshot: {screenshot}")
