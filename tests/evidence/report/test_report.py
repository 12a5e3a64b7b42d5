"""report.html, its SVG histograms and the markdown/table renderings for Prefect artifacts."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlencode

import pytest

from evidence.capabilities import DIMENSIONS, build_capabilities
from evidence.report import (
    ReportContext,
    capabilities_markdown,
    capability_table_rows,
    health_markdown,
    histogram_svg,
    perf_markdown,
    render_report,
    report_markdown,
    table_rows,
)
from evidence.report.scores import MASKED_LISTED, masked_rollout, masked_table, scores_markdown, scores_table
from evidence.report.tables import findings_table, format_value, perf_table

HOSTILE = '<script>alert("x")</script>|&'

SUMMARY = {
    "run": {
        "verdicts": {"healthy": 18, "unhealthy": 2, "unobserved": 3},
        "issues": {"agent_turn_hollow": 13, "model_call_failed": 0, "record_unreadable": 2, "check_execution_error": 2},
    }
}
PERF = {
    "run": {"overall_observability_coverage": 1.0, "total_latency_p50_ms": 20991.653},
    "groups": {"math": {"overall_observability_coverage": 0.5, "mean_num_turns": 3}},
}


def digest(agent: str, *, sandbox: bool) -> dict[str, Any]:
    """A hand-made capability digest: complete everywhere, sandbox complete or unavailable."""
    complete = {"present": True, "complete": True, "gaps": []}
    dimensions = dict.fromkeys(DIMENSIONS, complete)
    if not sandbox:
        dimensions["sandbox"] = {"present": False, "complete": False, "gaps": ["sandbox_unavailable"]}
    return {"agent": agent, "dimensions": dimensions, "latency_ms": None, "tokens_per_turn": None}


def capabilities_with_agent(name: str) -> dict[str, Any]:
    """One agent, two rollouts: sandbox evidence in one of them (🟡 50%), all else ✅."""
    return build_capabilities([digest(name, sandbox=True), digest(name, sandbox=False)])


def make_context(**changes: Any) -> ReportContext:
    fields: dict[str, Any] = {
        "job_id": "job-1234abcd",
        "run_id": "20260101T000000Z-abcdef",
        "started_at": "2026-01-01T00:00:00Z",
        "finished_at": "2026-01-01T00:02:00Z",
        "inputs": {"rollouts": "s3://bucket/job/rollouts.jsonl"},
        "parameters": {"session_id": "sample", "ignored_checks": ["a", "b"]},
        "quality_summary": SUMMARY,
        "capabilities": capabilities_with_agent("harness_agent"),
        "perf_summary": PERF,
        "latency_ms": [100.0, 200.0, 900.0],
        "tokens_per_turn": [12.5],
        "links": [("Enriched rollouts", "rollouts.jsonl"), ("Health", "health/quality_summary.json")],
    }
    fields.update(changes)
    return ReportContext(**fields)


class _Collector(HTMLParser):
    """Collects start tags with their attributes and the text inside each ``data-*`` element."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[tuple[dict[str, str | None], str]] = []
        self._open: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("td", "span"):
            self._open.append(dict(attrs))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "span") and self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        if self._open:
            self.text.append((self._open[-1], data))


def parse(page: str) -> _Collector:
    collector = _Collector()
    collector.feed(page)
    return collector


def test_matrix_cells_carry_status_and_words() -> None:
    page = render_report(make_context())
    cells = {(a["data-agent"], a["data-dimension"]): (a["data-status"], text) for a, text in parse(page).text if "data-dimension" in a}
    assert len(cells) == len(DIMENSIONS)
    assert cells["harness_agent", "per_call_metadata"] == ("full", "yes")  # words and a CSS marker: no emoji font needed (issue 43)
    assert cells["harness_agent", "sandbox"] == ("partial", "50%")
    matrix = page[page.index("<h2>Trajectory capability matrix") :]
    assert all(ord(char) < 0x2600 for char in matrix[: matrix.index("</table>")]), "the legend too"


def test_verdict_counts_are_rendered() -> None:
    page = parse(render_report(make_context()))
    verdicts = {attrs["data-verdict"]: text for attrs, text in page.text if "data-verdict" in attrs}
    assert verdicts == {"healthy": "18", "unhealthy": "2", "unobserved": "3"}


def test_every_value_is_escaped() -> None:
    context = make_context(
        job_id=HOSTILE,
        inputs={HOSTILE: HOSTILE},
        parameters={"p": HOSTILE},
        capabilities=capabilities_with_agent(HOSTILE),
        links=[(HOSTILE, '" onclick="x')],
    )
    page = render_report(context)
    assert "<script" not in page
    assert 'onclick="x' not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;|&amp;" in page
    assert parse(page).tags  # still well-formed enough to parse


def test_page_is_self_contained() -> None:
    page = render_report(make_context())
    assert not re.search(r"<(script|link|img|iframe|object)\b", page)
    assert "http://" not in page
    assert "https://" not in page.replace("s3://", "")
    assert "url(" not in page
    assert "@import" not in page
    hrefs = [attrs["href"] for tag, attrs in parse(page).tags if tag == "a"]
    assert hrefs == ["rollouts.jsonl", "health/quality_summary.json"]


def test_identity_inputs_and_parameters_are_shown() -> None:
    page = render_report(make_context())
    for text in ("job-1234abcd", "20260101T000000Z-abcdef", "2026-01-01T00:02:00Z", "s3://bucket/job/rollouts.jsonl"):
        assert text in page
    assert "[&quot;a&quot;, &quot;b&quot;]" in page


@pytest.mark.parametrize("capabilities", [None, {}])
def test_missing_health_matrix_and_perf_are_said_not_crashed(capabilities: Any) -> None:
    context = make_context(quality_summary=None, capabilities=capabilities, perf_summary=None, latency_ms=[], tokens_per_turn=[])
    page = render_report(context)
    assert "No health report in this run." in page
    assert "No capability matrix in this run." in page
    assert capabilities_markdown(capabilities) == "## Trajectory capability matrix\n\nNo capability matrix in this run.\n"
    assert capability_table_rows(capabilities) == []
    assert "No perf_summary in this run." in page
    assert page.count("no data") == 2


def test_top_findings_most_frequent_first_without_zeroes() -> None:
    assert findings_table(SUMMARY).rows == (("agent_turn_hollow", "13"), ("check_execution_error", "2"), ("record_unreadable", "2"))


def test_perf_table_puts_run_and_groups_side_by_side() -> None:
    table = perf_table(PERF)
    assert table.headers == ("Statistic", "run", "math")
    assert table.rows == (
        ("overall_observability_coverage", "1", "0.5"),
        ("total_latency_p50_ms", "20991.653", ""),
        ("mean_num_turns", "", "3"),
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "\u2014"), (True, "true"), (3, "3"), (0.1 + 0.2, "0.3"), (2.0, "2"), (-0.0001, "0"), ([1, "a"], '[1, "a"]')],
)
def test_format_value(value: Any, text: str) -> None:
    assert format_value(value) == text


def test_histogram_bins_cover_every_value() -> None:
    values = [1.0, 2.0, 2.5, 9.0, 10.0]
    svg = histogram_svg(values, title="Latency", unit="ms")
    counts = [int(n) for n in re.findall(r'data-count="(\d+)"', svg)]
    # width 0.9: 1.0 -> bin 0; 2.0 and 2.5 -> bin 1; 9.0 -> bin 8; the maximum closes the last bin
    assert counts == [1, 2, 0, 0, 0, 0, 0, 0, 1, 1]
    assert svg == histogram_svg(values, title="Latency", unit="ms")


def test_histogram_of_a_range_wider_than_the_largest_float() -> None:
    svg = histogram_svg([-1e308, 0.0, 1e308], title="Latency", unit="ms")
    counts = [int(n) for n in re.findall(r'data-count="(\d+)"', svg)]
    assert counts == [1, 0, 0, 0, 0, 1, 0, 0, 0, 1]
    assert "inf" not in svg
    assert "nan" not in svg


def test_histogram_of_a_range_narrower_than_ten_smallest_floats() -> None:
    svg = histogram_svg([0.0, 5e-324], title="Latency", unit="ms")
    assert [int(n) for n in re.findall(r'data-count="(\d+)"', svg)] == [1, 0, 0, 0, 0, 0, 0, 0, 0, 1]


def test_histogram_of_equal_values_is_one_bar() -> None:
    svg = histogram_svg([5.0, 5.0, 5.0], title="T", unit="ms")
    assert re.findall(r'data-count="(\d+)"', svg) == ["3"]


def test_histogram_escapes_its_title() -> None:
    assert "<b>" not in histogram_svg([1.0], title="<b>", unit="&")


def test_capabilities_markdown_matches_the_matrix() -> None:
    text = capabilities_markdown(capabilities_with_agent("a|b"))
    lines = text.splitlines()
    assert lines[2].startswith("| Agent | Rollouts | Per-call metadata |")
    assert lines[4].startswith("| a\\|b | 2 | \u2705 yes |")
    assert "\U0001f7e1 50%" in lines[4]
    assert "| a\\|b | Resource/sandbox evidence | sandbox_unavailable | 1 |" in text


def test_markdown_cells_cannot_inject_html_or_rows() -> None:
    text = capabilities_markdown(capabilities_with_agent("<img>\nrow"))
    assert "<img>" not in text
    assert "&lt;img&gt; row" in text


def test_table_artifact_rows_are_keyed_by_header() -> None:
    rows = capability_table_rows(capabilities_with_agent("harness_agent"))
    assert rows[0]["Agent"] == "harness_agent"
    assert rows[0]["Resource/sandbox evidence"] == "\U0001f7e1 50%"
    assert table_rows(perf_table(PERF))[0] == {"Statistic": "overall_observability_coverage", "run": "1", "math": "0.5"}


def test_health_and_perf_markdown() -> None:
    assert "| unhealthy | 2 |" in health_markdown(SUMMARY)
    assert "| total | 23 |" in health_markdown(SUMMARY)
    assert health_markdown(None) == "## Health\n\nNo health report in this run.\n"
    assert "| total_latency_p50_ms | 20991.653 |  |" in perf_markdown(PERF)


def test_report_markdown_has_every_section() -> None:
    text = report_markdown(make_context())
    assert [line for line in text.splitlines() if line.startswith("## ")] == [
        "## Health",
        "## Trajectory capability matrix",
        "## Performance",
    ]
    assert "20260101T000000Z-abcdef" in text


# ---- the scores section (scores.json raw against clean, masked rollouts, rewards)

SCORES = {
    "groups": {
        "math": {
            "agent": "simple_agent",
            "masked_rollouts": {"raw": 0, "clean": 2},
            "metrics": {
                "mean/reward": {"raw": 0.5, "clean": 0.75, "difference": 0.25, "raw_ci95": [0.1, 0.9], "clean_ci95": None},
                "mean/input_tokens": {"raw": 120.0, "clean": 100.0, "difference": -20.0, "raw_ci95": None, "clean_ci95": None},
            },
        },
        HOSTILE: {
            "agent": HOSTILE,
            "masked_rollouts": {"raw": 0, "clean": 3},
            "metrics": {"mean/reward": {"raw": 1.0, "clean": None, "difference": None, "raw_ci95": None, "clean_ci95": None}},
        },
    }
}
VERDICT_LINE = {
    "_ng_task_index": 4,
    "_ng_rollout_index": 0,
    "rollout_id": "4-0",
    "verdict": "unhealthy",
    "findings": [
        {"check": "agent_turn_hollow", "locator": {"turn": 1}},
        {"check": "model_call_failed", "locator": {}},
        {"check": "agent_turn_hollow", "locator": {"turn": 2}},
        {"check": "rollout_token_count_mismatch", "locator": {}},
        {"check": "model_call_failed", "locator": {}},
        {"check": "agent_turn_hollow", "locator": {"turn": 3}},
        {"check": "trajectory_capture_mismatch", "locator": {}},
    ],
    "unobserved": [],
}


def scored_context(**changes: Any) -> ReportContext:
    masked = [masked_rollout(VERDICT_LINE), masked_rollout({**VERDICT_LINE, "rollout_id": HOSTILE, "findings": []})]
    fields = {"scores": SCORES, "masked_rollouts": masked, "rewards": [0.0, 0.0, 0.5, 1.0, 1.0, 1.0], **changes}
    return make_context(**fields)


def test_scores_come_first_raw_against_clean_with_data_attributes() -> None:
    page = render_report(scored_context(gate={"passed": True, "limits": []}))
    headings = re.findall(r"<h2[^>]*>([^<]*)</h2>", page)
    assert headings[0] == "Scores: raw against clean"  # before the gate, the inputs and every other section
    rows = [attrs for tag, attrs in parse(page).tags if tag == "th" and "data-metric" in attrs]  # a table per group, a column per metric
    assert [(r["data-group"], r["data-metric"], r["data-raw"], r["data-clean"]) for r in rows] == [
        ("math", "mean/reward", "0.5", "0.75"),
        ("math", "mean/input_tokens", "120.0", "100.0"),
        (HOSTILE, "mean/reward", "1.0", "null"),
    ]
    table = scores_table(SCORES)
    assert table.rows[0] == ("math", "simple_agent", "mean/reward", "0.5", "0.75", "0.25", "[0.1, 0.9]", "\u2014", "0 / 2")
    assert table.rows[2][3:6] == ("1", "\u2014", "\u2014")  # every rollout of the group masked: no clean score


def test_masked_rollouts_are_listed_with_their_top_three_checks() -> None:
    entry = masked_rollout(VERDICT_LINE)
    assert entry.checks == (("agent_turn_hollow", 3), ("model_call_failed", 2), ("rollout_token_count_mismatch", 1))
    assert (entry.rollout_id, entry.verdict, entry.findings) == ("4-0", "unhealthy", 7)
    assert masked_table([entry]).rows == (
        ("4-0", "unhealthy", "agent_turn_hollow (3), model_call_failed (2), rollout_token_count_mismatch (1), 1 more"),
    )
    page = render_report(scored_context())
    assert "Clean scores leave out the rollouts whose health verdict is unhealthy: 2 in this run." in page
    many = render_report(scored_context(masked_rollouts=[entry] * MASKED_LISTED, quality_summary={"run": {"verdicts": {"unhealthy": 31}}}))
    assert "unhealthy: 31 in this run, the first 20 listed." in many
    both = render_report(scored_context(masked_verdicts=("unhealthy", "unobserved")))
    assert "verdict is unhealthy or unobserved: 5 in this run, the first 2 listed." in both  # 2 unhealthy + 3 unobserved
    none = render_report(scored_context(masked_verdicts=(), masked_rollouts=[]))
    assert "Clean scores mask no rollout by health (score mask: none)." in none
    assert 'id="masked-rollouts"' not in none
    assert '<td><a href="viewer/index.html#id=4-0">4-0</a></td>' in render_report(scored_context(viewer="viewer/index.html"))
    masked_list = page[page.index('id="masked-rollouts"') :]
    assert "<a href" not in masked_list[: masked_list.index("</table>")]  # no viewer in the run: no link to one


def test_a_masked_rollouts_link_into_the_viewer_is_encoded() -> None:
    page = render_report(scored_context(viewer="viewer/index.html"))
    hrefs = re.findall(r'<td><a href="([^"]*)">', page[page.index('id="masked-rollouts"') :])
    assert hrefs[0] == "viewer/index.html#id=4-0"
    assert hrefs[1] == "viewer/index.html#" + urlencode({"id": HOSTILE}).replace("&", "&amp;")  # the viewer decodes it back


def test_the_reward_histogram_and_the_scores_are_escaped_and_free_of_emoji() -> None:
    page = render_report(scored_context())
    section = page[page.index('<h2 id="scores"') : page.index("<h2", page.index('<h2 id="scores"') + 1)]
    svg = section[section.index("<svg") :]
    assert 'aria-label="Reward per rollout (raw)"' in svg
    assert [int(n) for n in re.findall(r'data-count="(\d+)"', svg)] == [2, 0, 0, 0, 0, 1, 0, 0, 0, 3]
    assert "<title>0.9\u20131: 3</title>" in svg  # no unit after a reward's range
    assert "<script" not in section
    assert "&lt;script&gt;" in section
    assert all(ord(char) < 0x2600 for char in section), "no emoji or pictographs: a machine without emoji fonts shows boxes"


def test_the_page_forbids_scripts_and_requests_by_policy() -> None:
    page = render_report(scored_context())
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page)
    assert policy is not None
    assert "default-src 'none'" in policy.group(1)
    assert "script-src" not in policy.group(1)


def test_a_run_without_scores_says_so() -> None:
    page = render_report(make_context())
    assert "No scores.json in this run." in page
    assert scores_markdown(None, [], ("unhealthy",), SUMMARY) == "## Scores: raw against clean\n\nNo scores.json in this run.\n"


def test_scores_markdown_is_the_artifact() -> None:
    text = scores_markdown(SCORES, [masked_rollout(VERDICT_LINE)], ("unhealthy",), SUMMARY)
    lines = text.splitlines()
    assert lines[0] == "## Scores: raw against clean"
    assert "| math | simple_agent | mean/reward | 0.5 | 0.75 | 0.25 | [0.1, 0.9] | \u2014 | 0 / 2 |" in lines
    assert "Clean scores leave out the rollouts whose health verdict is unhealthy: 2 in this run, the first 1 listed." in lines
    assert lines[-1].startswith("| 4-0 | unhealthy | agent_turn_hollow (3)")
    assert "<script" not in text


def test_the_identity_says_the_scope_and_readable_times_and_the_matrix_reads_without_emoji() -> None:
    """Issue 35: a subset said so nowhere, times were raw ISO, and the matrix was emoji only."""
    page = render_report(
        make_context(scope="subset: rollout ids 0-0", started_at="2026-01-01T00:00:00+00:00", finished_at="2026-01-01T00:02:00+00:00")
    )
    assert "<dt>Scope</dt><dd>subset: rollout ids 0-0</dd>" in page
    assert '<time datetime="2026-01-01T00:02:00+00:00">2026-01-01 00:02:00 UTC</time>' in page
    assert "<dt>Took</dt><dd>2 min 0 s</dd>" in page
    assert '<span class="cap" data-status="full">yes</span>: complete in every rollout' in page  # a CSS marker, then words
    assert '<span class="cap" data-status="unavailable">no</span>: complete in none' in page
    assert "td,dd{overflow-wrap:anywhere}" in page  # long URLs wrap inside their cell (compare.html shares the sheet)
    assert "<dt>Scope</dt><dd>full</dd>" in render_report(make_context())
