"""A real browser loads compare.html of two stage runs: every group is named in the DOM.

Same Chromium set-up as the run report's browser test (headless, fresh profile, skipped where
/usr/bin/chromium is absent).
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

from flows.cli.main import main
from tests.browser.test_report_in_chromium import chromium, pytestmark  # noqa: F401 - the same skip marker
from tests.compared_runs import ComparedRuns


class _Page(HTMLParser):
    """Reads the group headings (data-group), the summary (data-status, data-trusted) and the text."""

    def __init__(self) -> None:
        super().__init__()
        self.groups: list[str] = []
        self.summary: dict[str, str | None] = {}
        self.text = ""

    def handle_data(self, data: str) -> None:
        self.text += data

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if "data-group" in found:
            self.groups.append(found["data-group"] or "")
        if found.get("id") == "summary":
            self.summary = found


def test_chromium_shows_every_group_of_a_comparison(compared_runs: ComparedRuns, tmp_path: Path) -> None:
    out = tmp_path / "compare"
    assert main(["compare", str(compared_runs.first), str(compared_runs.changed), "--output", str(out)]) == 0
    page = _Page()
    page.feed(chromium(tmp_path / "profile", "--dump-dom", (out / "compare.html").as_uri()).stdout)

    perf_groups = json.loads((compared_runs.first / "perf_summary.json").read_text(encoding="utf-8"))["groups"]
    assert page.groups == ["(whole run)", *sorted(perf_groups)]
    assert len(perf_groups) == 6
    assert (page.summary["data-status"], page.summary["data-trusted"]) == ("changed", "false")
    # Debian's chromium has no emoji font: a status change reads in words (it read "went \u25a1 \u2192 \u25a1", issue 43)
    assert "claude_code_agent: Tool execution went full \u2192 partial" in page.text
    assert [char for char in page.text if ord(char) >= 0x2600] == []
    screenshot = tmp_path / "compare.png"
    chromium(tmp_path / "profile-shot", "--window-size=1280,2400", f"--screenshot={screenshot}", (out / "compare.html").as_uri())
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"compare screenshot: {screenshot}")
