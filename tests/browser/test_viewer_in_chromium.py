"""The rollout viewer in a real browser: from report.html to a rollout's findings, tool calls and ATIF file; hostile rows stay text.

Headless Chromium driven over the DevTools protocol (``cdp.py``): it clicks links, chooses a
filter, waits for the detail file the page loads and reads the DOM. Skipped where
/usr/bin/chromium is absent, as the report's test is. Screenshots are kept in the test's tmp
dir and their paths printed.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tasks.rundir import VIEWER_PAGE
from tasks.storage import Location
from tasks.tables.build import build_from_outputs
from tests.browser.cdp import Chromium, Page
from tests.browser.test_report_in_chromium import CHROMIUM
from tests.viewer_runs import BREAKOUT, IMAGE, LONG, RTL, SCRIPT, SVG, hostile_run

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium not installed at /usr/bin/chromium (apt-get install chromium)")

READY = "document.documentElement.dataset.ready"


def rows_shown(page: Page) -> list[dict[str, str]]:
    return page.evaluate(  # type: ignore[no-any-return]
        "Array.from(document.querySelectorAll('#rollouts tbody tr')).map(tr => ({line: tr.dataset.line, verdict: tr.dataset.verdict}))"
    )


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def example_run(tmp_path_factory: pytest.TempPathFactory, prefect_server: str) -> Path:
    """The bundled example job, run by the stage (which writes the viewer and links it from report.html)."""
    from tests.conftest import EXAMPLE_JOB
    from tests.flows.support import local_path, run_stage

    output = tmp_path_factory.mktemp("viewer") / "out"
    result = run_stage(rollouts=str(EXAMPLE_JOB / "rollouts.jsonl"), capture_dir=str(EXAMPLE_JOB / "model-calls"), output=str(output))
    return local_path(result["run_dir"])


def test_from_the_report_to_a_rollouts_findings_tool_output_and_atif_file(example_run: Path, tmp_path: Path) -> None:
    rows = jsonl(example_run / "rollouts.jsonl")
    verdict_lines = jsonl(example_run / "health" / "rollout_verdicts.jsonl")
    unhealthy = sum(1 for line in verdict_lines if line["verdict"] == "unhealthy")
    with Chromium(tmp_path / "profile") as browser:
        page = browser.page((example_run / "report.html").as_uri())
        assert page.evaluate("document.querySelector('#viewer-link a').getAttribute('href')") == VIEWER_PAGE
        page.click("#viewer-link a")
        page.wait(READY)
        assert page.evaluate("location.pathname").endswith("/viewer/index.html")
        matching = page.evaluate("document.getElementById('match-count').textContent")
        assert matching.startswith(f"{len(rows)} of {len(rows)} rollouts match")
        chips = page.evaluate(
            "Object.fromEntries(Array.from(document.querySelectorAll('.verdicts a'))"
            ".map(a => [a.dataset.verdict, a.firstChild.textContent]))"
        )
        summary = json.loads((example_run / "health" / "quality_summary.json").read_text())["run"]["verdicts"]
        assert chips == {verdict: str(count) for verdict, count in summary.items() if count}
        page.screenshot(tmp_path / "viewer-list.png")

        page.select("#filter-verdict", "unhealthy")
        page.wait(f"document.getElementById('match-count').textContent.startsWith('{unhealthy} of ')")
        shown = rows_shown(page)
        assert len(shown) == unhealthy
        assert {row["verdict"] for row in shown} == {"unhealthy"}

        page.click("#rollouts tbody tr a.rollout-link")
        page.wait("document.getElementById('section-turns')")
        line = int(page.evaluate("new URLSearchParams(location.hash.slice(1)).get('line')"))
        row = rows[line - 1]
        mine = next(v for v in verdict_lines if v["rollout_id"] == row["ng_trajectory"]["rollout_id"] and v["verdict"] == "unhealthy")
        findings = page.evaluate("Array.from(document.querySelectorAll('li.finding')).map(li => li.dataset.check)")
        assert findings == [finding["check"] for finding in mine["findings"]]
        flags = page.evaluate("Array.from(document.querySelectorAll('.turn .flag')).map(f => f.closest('.turn').id)")
        turn_nos = {turn["turn_no"]: index for index, turn in enumerate(row["ng_trajectory"]["turns"])}
        assert flags == [f"turn-{turn_nos[finding['locator']['turn']]}" for finding in mine["findings"]]  # each finding, in place
        page.screenshot(tmp_path / "viewer-rollout.png")

        page.click("li.finding a.to-subject")
        page.wait("document.querySelector('.turn.focus')")
        assert page.evaluate("document.querySelector('.focus').id") == f"turn-{turn_nos[mine['findings'][0]['locator']['turn']]}"
        tool = row["ng_trajectory"]["tool_calls"][0]
        output = page.evaluate("document.querySelector('#tool-0 .io div:last-child pre').textContent")
        assert output == tool["output"][: len(output)]
        assert len(output) == min(len(tool["output"]), 400)
        assert page.evaluate("document.querySelector('#tool-0 h4').textContent") == f"Tool call #0 {tool['tool_name']}"
        refusal = next(r["error"] for r in jsonl(example_run / "atif" / "rejections.jsonl") if r["line"] == line)
        assert page.evaluate("document.getElementById('atif-refusal').textContent") == f"refused: {refusal}"
        assert page.evaluate("document.getElementById('row-link').parentElement.textContent") == f"rollouts.jsonl, line {line}"

        page.click("#back")
        page.wait(
            f"document.getElementById('match-count') && document.getElementById('match-count').textContent.startsWith('{unhealthy} of ')"
        )
        page.goto((example_run / "viewer" / "index.html").as_uri() + "#atif=exported")
        page.wait("document.querySelector('#rollouts tbody tr')")
        page.click("#rollouts tbody tr a.rollout-link")
        page.wait("document.getElementById('atif-link')")
        atif_file = page.evaluate("document.getElementById('atif-link').textContent").removeprefix("atif/")
        page.click("#atif-link")
        page.wait(f"location.pathname.endsWith('/atif/{atif_file}') && document.readyState === 'complete'")
        assert json.loads(page.evaluate("document.body.innerText")) == json.loads((example_run / "atif" / atif_file).read_text())
        assert page.console_errors() == []
    print(f"viewer screenshots: {tmp_path / 'viewer-list.png'} {tmp_path / 'viewer-rollout.png'}")


MID_WORD_BREAKS = """(function () {
  var broken = [];
  document.querySelectorAll("#scores ~ .group-scores caption, #scores ~ .group-scores th").forEach(function (cell) {
    var walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT), node, chars = [];
    while ((node = walker.nextNode())) {
      for (var i = 0; i < node.data.length; i++) {
        var range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        var rect = range.getClientRects()[0];
        if (rect) chars.push([node.data[i], rect.top]);
      }
    }
    for (var j = 1; j < chars.length; j++) {
      var wrapped = chars[j][1] > chars[j - 1][1] + 2;
      if (wrapped && "_/ ".indexOf(chars[j - 1][0]) < 0 && chars[j][0] !== " ") broken.push(cell.textContent);
    }
  });
  return broken;
})()"""
"""The score captions and headings that a line break splits anywhere but after ``_``, ``/`` or a space."""


def test_the_reports_scores_fit_1400_px_and_its_masked_rollouts_open_in_the_viewer(example_run: Path, tmp_path: Path) -> None:
    """Issue 43: at 1400 px ids and metric names broke mid-word; masked rollouts were plain text; a matrix needed an emoji font."""
    verdicts = jsonl(example_run / "health" / "rollout_verdicts.jsonl")
    masked = [line["rollout_id"] for line in verdicts if line["verdict"] == "unhealthy"]
    scores = json.loads((example_run / "scores.json").read_text())["groups"]
    with Chromium(tmp_path / "profile", width=1400) as browser:
        page = browser.page((example_run / "report.html").as_uri())
        page.wait("document.readyState === 'complete'")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        groups = page.evaluate("Array.from(document.querySelectorAll('table.scores')).map(t => t.dataset.group)")
        assert groups == list(scores)  # one compact table per group, its key metrics as columns
        metrics = page.evaluate("Array.from(document.querySelectorAll('table.scores thead th[data-metric]')).map(th => th.dataset.metric)")
        assert metrics == [name for group in scores.values() for name in group["metrics"]]
        assert page.evaluate(MID_WORD_BREAKS) == []
        text = page.evaluate("document.body.innerText")
        assert [char for char in text if ord(char) >= 0x2600] == []  # no emoji: Debian's chromium has no font for them
        page.screenshot(tmp_path / "report-1400.png")

        links = page.evaluate("Array.from(document.querySelectorAll('#masked-rollouts tbody td:first-child a')).map(a => a.textContent)")
        assert links == masked
        page.click("#masked-rollouts tbody tr:last-child a")
        page.wait("document.getElementById('section-turns')")
        assert page.evaluate("document.querySelector('h1 .v').textContent") == masked[-1]
        line = int(page.evaluate("new URLSearchParams(location.hash.slice(1)).get('line')"))
        assert jsonl(example_run / "rollouts.jsonl")[line - 1]["ng_trajectory"]["rollout_id"] == masked[-1]
        assert page.console_errors() == []
    print(f"report at 1400 px: {tmp_path / 'report-1400.png'}")


@pytest.fixture
def served(example_run: Path) -> Iterator[str]:
    """The run directory behind a plain static file server on 127.0.0.1 (as a bucket's web endpoint would serve it)."""
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(example_run))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_viewer_works_behind_a_static_file_server(example_run: Path, served: str, tmp_path: Path) -> None:
    with Chromium(tmp_path / "profile") as browser:
        page = browser.page(f"{served}/{VIEWER_PAGE}#line=2")
        page.wait("document.getElementById('section-turns')")  # its detail file came from the server
        assert (
            page.evaluate("document.querySelector('h1 .v').textContent")
            == jsonl(example_run / "rollouts.jsonl")[1]["ng_trajectory"]["rollout_id"]
        )
        assert page.evaluate("document.getElementById('row-link').href") == f"{served}/rollouts.jsonl"
        assert page.console_errors() == []


def test_hostile_rows_are_shown_as_text_and_never_run(tmp_path: Path) -> None:
    run = hostile_run(tmp_path / "run")
    head = json.loads((run / "manifest.json").read_text())["run"]
    build_from_outputs(Location(str(run)), head["job_id"], head["run_id"])
    markup = "#app img, #app svg, #app script, #app iframe, #app object"
    with Chromium(tmp_path / "profile") as browser:
        page = browser.page((run / VIEWER_PAGE).as_uri())
        page.wait(READY)
        agents = page.evaluate("Array.from(document.querySelectorAll('#rollouts tbody tr td:nth-child(4)')).map(td => td.title)")
        assert agents == [f"agent {IMAGE}"] * 3
        for line in (1, 2, 3):
            page.goto((run / VIEWER_PAGE).as_uri() + f"#line={line}")
            page.wait("document.getElementById('section-turns')")
            assert page.evaluate("typeof window.__pwned") == "undefined"
            assert page.evaluate(f"document.querySelectorAll({json.dumps(markup)}).length") == 0
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # a 200,000-character line wraps
            if line == 1:
                text = page.evaluate("document.getElementById('app').textContent")
                for hostile in (SCRIPT, IMAGE, BREAKOUT, SVG, RTL):
                    assert hostile in text
                output = page.evaluate("document.querySelector('#tool-0 .io div:last-child pre').textContent")
                assert output == (SCRIPT + LONG)[:400]
                assert page.evaluate("document.querySelector('#tool-0 .io div:last-child p').textContent").startswith(
                    f"\u2026 the first 400 of {len(SCRIPT + LONG):,} characters"
                )
                href = page.evaluate("document.getElementById('atif-link').href")
                assert href.startswith((run / "atif").as_uri() + "/javascript%3A")
                assert page.evaluate("document.getElementById('section-findings').textContent").count("not_a_check") == 1
                page.screenshot(tmp_path / "hostile-rollout.png")
            if line == 3:
                assert page.evaluate("document.querySelector('#tool-0 .io div:last-child pre').textContent") == "lone \ufffd surrogate"
        assert page.console_errors() == []  # nothing was even tried: a blocked script or image would be reported here
    print(f"hostile rollout screenshot: {tmp_path / 'hostile-rollout.png'}")


def test_a_gaps_meaning_is_plain_words_and_its_detail_the_value(tmp_path: Path, prefect_server: str) -> None:
    """Issue 43: the meaning column showed the registry's literal ``(count=<n>)`` beside the detail holding the count."""
    from tests.tables_runs import sample_run

    run = sample_run(tmp_path / "out", "hostile_job")
    rows = jsonl(run / "rollouts.jsonl")
    line, detail = next(
        (number, gap["detail"])
        for number, row in enumerate(rows, 1)
        for gap in (row.get("ng_model_call_capture") or {}).get("gaps") or []
        if gap.get("code") == "model_call_capture_records_unreadable"
    )
    with Chromium(tmp_path / "profile") as browser:
        page = browser.page((run / VIEWER_PAGE).as_uri() + f"#line={line}")
        page.wait("document.getElementById('section-gaps')")
        cells = page.evaluate(
            "Array.from(document.querySelectorAll('#section-gaps tbody tr'))"
            ".map(tr => Array.from(tr.cells).map(td => td.textContent))"
            ".find(cells => cells[1] === 'model_call_capture_records_unreadable')"
        )
        assert cells[2] == "some capture lines could not be read; the detail counts them"
        assert cells[4] == detail
        assert page.console_errors() == []
