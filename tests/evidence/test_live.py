"""A running job's live status: in flight against stalled, and when the job is over."""

from __future__ import annotations

from dataclasses import replace

from evidence import EndReason, LiveStatus, Outstanding, answered_accounting, capture_activity, end_of_job, outstanding_rollouts


def test_a_rollout_without_a_row_is_in_flight_while_its_capture_changes_then_stalled() -> None:
    activity = capture_activity(
        [("0-0.capture.jsonl", 100.0), ("0-1.capture.jsonl", 10.0), ("0-2-a1.capture.jsonl", 95.0), ("x.txt", 99.0)]
    )
    assert activity == {"0-0": 100.0, "0-1": 10.0, "0-2": 95.0}  # a retried attempt's capture is its rollout's activity
    in_flight, stalled, waiting = outstanding_rollouts(["0-0", "0-1", "0-2", "0-3"], activity, now=110.0, stall_after=30.0)
    assert in_flight == [Outstanding("0-2", 15.0), Outstanding("0-0", 10.0)]  # longest idle first
    assert stalled == [Outstanding("0-1", 100.0)]
    assert waiting == 1  # no capture yet: not dispatched


def test_the_job_ends_on_its_end_file_on_every_answer_once_quiet_or_on_the_idle_timeout() -> None:
    base = {"end_file": False, "expected": 4, "outstanding": 1, "quiet_s": 0.0, "idle_s": 0.0, "idle_timeout": 60.0}
    assert end_of_job(**base) is None
    assert end_of_job(**base | {"end_file": True}) is EndReason.aggregate_metrics
    assert end_of_job(**base | {"outstanding": 0}) is None  # a capture may still gain its last line
    assert end_of_job(**base | {"outstanding": 0, "quiet_s": 5.0}) is EndReason.all_answered
    assert end_of_job(**base | {"outstanding": 0, "quiet_s": 5.0, "expected": None}) is None  # unknown debt: never "all answered"
    assert end_of_job(**base | {"idle_s": 60.0}) is EndReason.idle_timeout


def test_a_live_gate_owes_only_what_was_answered() -> None:
    accounting = {
        "expected": 10,
        "landed": 3,
        "failed": 1,
        "lost": 6,
        "unexpected": 0,
        "shards": {"r.jsonl": {"expected": 10, "landed": 3, "failed": 1, "lost": 6}},
    }
    live = answered_accounting(accounting)
    assert (live["expected"], live["lost"]) == (4, 0)
    assert live["shards"]["r.jsonl"]["expected"] == 4


def test_live_json_names_the_rollouts_with_their_idle_time() -> None:
    status = LiveStatus("2026-01-01T00:00:00+00:00", 3, 1, 8, [Outstanding("1-0", 2.04)], [Outstanding("0-3", 700.0)], waiting=3)
    document = status.document()
    assert (document["in_flight"], document["stalled"], document["waiting"], document["done"]) == (1, 1, 3, False)
    assert document["stalled_rollouts"] == [{"rollout": "0-3", "idle_s": 700.0}]
    assert document["in_flight_rollouts"] == [{"rollout": "1-0", "idle_s": 2.0}]


def test_a_snapshots_report_says_it_is_live_and_names_the_stalled_rollouts() -> None:
    from evidence import ReportContext, render_report

    status = LiveStatus("2026-01-01T00:00:00+00:00", 3, 1, 8, [], [Outstanding("0-3", 700.0)], waiting=3)
    context = ReportContext("j", "r", "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00+00:00", {}, {}, None, None, None, [], [], [])
    live = render_report(replace(context, live=status.document()))
    assert '<h2 id="live" data-done="false">Live: provisional</h2>' in live
    assert "3 rows and 1 failed attempts of 8 expected" in live
    assert '<table id="stalled-rollouts">' in live
    assert "<td>0-3</td>" in live
    assert 'id="live"' not in render_report(context)  # a finished run's report has no live section
