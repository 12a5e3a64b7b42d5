"""The report's run-accounting and quality-gate sections, in markdown (the artifacts) and on the page.

What each branch promises, written out by hand: unknown debts shown as dashes and named in a
note, lost rollouts listed up to the document's bound and then counted, a failing limit with its
reason, and a run without accounting said so.
"""

from __future__ import annotations

from typing import Any

from evidence import ShardAccount, accounting_markdown, gate_markdown, render_report, run_accounting
from tests.evidence.report.test_report import make_context


def _accounting(*, subset: bool = False) -> dict[str, Any]:
    """Shard a.jsonl owes three rows and lands none; b.jsonl has no materialized inputs."""
    owed, unknown = ShardAccount("a.jsonl", True), ShardAccount("b.jsonl", False)
    for task in range(3):
        owed.expect({"_ng_task_index": task, "_ng_rollout_index": 1})
    unknown.land({"_ng_task_index": 0, "_ng_rollout_index": 0})
    unknown.fail({"_ng_task_index": 1, "_ng_rollout_index": 0, "_ng_failure_class": "agent_run_error"})
    return run_accounting([owed, unknown], listed=2, subset=subset)


GATE = {
    "passed": False,
    "failing": ["max_lost_share"],
    "limits": [
        {"name": "max_failed_share", "limit": 0.1, "measured": 0.05, "passed": True, "reason": None},
        {"name": "max_lost_share", "limit": 0.0, "measured": None, "passed": False, "reason": "the debt is unknown"},
    ],
}


def test_the_accounting_markdown_shows_unknown_debts_and_the_lost_rollouts_it_lists() -> None:
    assert accounting_markdown(_accounting()) == (
        "## Run accounting\n\n"
        "| shard | expected | landed | failed | lost | duplicates | unexpected | failed by class |\n"
        "|---|---|---|---|---|---|---|---|\n"
        "| a.jsonl | 3 | 0 | 0 | 3 | 0 | 0 |  |\n"
        "| b.jsonl | \u2014 | 1 | 1 | \u2014 | 0 | \u2014 | agent_run_error 1 |\n"
        "| total | \u2014 | 1 | 1 | \u2014 | 0 | \u2014 | agent_run_error 1 |\n"
        "\nExpected unknown (no materialized inputs): b.jsonl\n"
        "\n### Lost rollouts\n\n"
        "| shard | _ng_task_index | _ng_rollout_index |\n"
        "|---|---|---|\n"
        "| a.jsonl | 0 | 1 |\n"
        "| a.jsonl | 1 | 1 |\n"
        "\n\u2026 and 1 more.\n"
    )


def test_a_run_without_accounting_says_so() -> None:
    assert accounting_markdown(None) == "## Run accounting\n\nNo accounting in this run.\n"


def test_a_subset_run_says_it_owes_nothing() -> None:
    text = accounting_markdown(_accounting(subset=True))
    assert "\nA subset run owes nothing: landed and failed count the rows it selected;" in text
    assert "Expected unknown" not in text


def test_the_gate_markdown_names_each_limit_and_why_one_failed() -> None:
    assert gate_markdown(GATE) == (
        "## Quality gate: FAILED\n\n"
        "| limit | value | measured | result |\n"
        "|---|---|---|---|\n"
        "| max_failed_share | 0.1 | 0.05 | pass |\n"
        "| max_lost_share | 0 | \u2014 | FAIL: the debt is unknown |\n"
    )


def test_the_page_shows_the_same_sections() -> None:
    page = render_report(make_context(accounting=_accounting(), gate=GATE))
    assert '<p class="muted">Expected unknown (no materialized inputs): b.jsonl</p>' in page
    assert "<h3>Lost rollouts</h3>" in page
    assert '<p class="muted">\u2026 and 1 more.</p>' in page
    assert '<h2 id="gate" data-passed="false">Quality gate: failed</h2>' in page
    assert "FAIL: the debt is unknown" in page
    assert '<p class="muted">No accounting in this run.</p>' in render_report(make_context(accounting=None))
