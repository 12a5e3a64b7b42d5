"""Rollout traces (``evidence.export``) checked against the trajectories of the sample jobs.

Two kinds of check: the span tree against each row's own evidence (0.7.0's ``ng_perf`` token
sums and tool count, the invocations' parents, each call's and tool's fields), and golden files
(``export_golden/<job>.jsonl``: one line per main row, the trace or the skip reason) made once
with ``rollout_trace`` and reviewed by hand, so any change to ids, names or attributes shows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evidence import RolloutVerdicts, TraceIdentity, TraceModel, TraceSkipped, rollout_trace

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"
GOLDEN = Path(__file__).resolve().parent / "export_golden"
JOBS = ("realistic_job", "hostile_job")


def sample_rows(job: str) -> list[dict[str, Any]]:
    lines = (SAMPLES / f"{job}.expected" / "rollouts.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def identity(line: int) -> TraceIdentity:
    return TraceIdentity("sample-job", "golden-run", f"main:{line}")


def golden_line(line: int, trace: TraceModel | TraceSkipped) -> dict[str, Any]:
    """The golden form of one row's result: ids in hex, spans in tree order."""
    if isinstance(trace, TraceSkipped):
        return {"line": line, "skipped": trace.reason}
    return {
        "line": line,
        "trace_id": trace.trace_id.hex(),
        "resource": dict(trace.resource),
        "spans": [
            {
                "span_id": s.span_id.hex(),
                "parent_id": s.parent_id.hex() if s.parent_id else None,
                "name": s.name,
                "kind": s.kind,
                "start_ns": s.start_ns,
                "end_ns": s.end_ns,
                "status": s.status,
                "attributes": {k: list(v) if isinstance(v, tuple) else v for k, v in s.attributes.items()},
                **(
                    {"events": [{"name": e.name, "time_ns": e.time_ns, "attributes": dict(e.attributes)} for e in s.events]}
                    if s.events
                    else {}
                ),
            }
            for s in trace.spans
        ],
    }


def sample_verdicts(job: str) -> RolloutVerdicts:
    lines = (SAMPLES / f"{job}.expected" / "health" / "rollout_verdicts.jsonl").read_text("utf-8").splitlines()
    return RolloutVerdicts(json.loads(line) for line in lines if line.strip())


def sample_traces(job: str) -> list[tuple[int, TraceModel | TraceSkipped]]:
    """Each sample row's trace, with its verdict line (the reviewed golden files hold these)."""
    verdicts = sample_verdicts(job)
    return [(n, rollout_trace(row, identity(n), verdicts.take(row, n - 1))) for n, row in enumerate(sample_rows(job), start=1)]


@pytest.mark.parametrize("job", JOBS)
def test_traces_equal_the_reviewed_golden_files(job: str) -> None:
    actual = [golden_line(n, trace) for n, trace in sample_traces(job)]
    expected = [json.loads(line) for line in (GOLDEN / f"{job}.jsonl").read_text("utf-8").splitlines()]
    assert len(actual) == len(expected)
    for got, wanted in zip(actual, expected, strict=False):
        assert got == wanted, f"{job} line {got['line']}"


def _sum(spans: list[Any], key: str) -> int | None:
    values = [s.attributes[key] for s in spans if key in s.attributes]
    return sum(values) if values else None


@pytest.mark.parametrize("job", JOBS)
def test_span_tree_follows_the_trajectory(job: str) -> None:
    trace_ids = set()
    for line, row in enumerate(sample_rows(job), start=1):
        trace = rollout_trace(row, identity(line))
        trajectory = row.get("ng_trajectory")
        if isinstance(trace, TraceSkipped):
            assert not isinstance(trajectory, dict) or not trajectory["invocations"], line
            continue
        trace_ids.add(trace.trace_id)
        spans = {s.span_id: s for s in trace.spans}
        assert len(spans) == len(trace.spans), "span ids are unique"
        by_op: dict[str, list[Any]] = {}
        for span in trace.spans:
            by_op.setdefault(span.attributes["gen_ai.operation.name"], []).append(span)
        invocation_span = {s.attributes["evidence_stage.invocation.id"]: s for s in by_op["invoke_agent"]}
        assert sorted(invocation_span) == sorted(i["invocation_id"] for i in trajectory["invocations"])
        perf = row["ng_perf"]  # 0.7.0's own sums over the calls the invocations own
        chats = by_op.get("chat", [])
        assert _sum(chats, "gen_ai.usage.input_tokens") == perf.get("prompt_tokens"), line
        assert _sum(chats, "gen_ai.usage.output_tokens") == perf.get("completion_tokens"), line
        assert _sum(chats, "gen_ai.usage.cache_read.input_tokens") == perf.get("cached_prompt_tokens"), line
        assert len(by_op.get("execute_tool", [])) == perf["num_tool_calls"], line
        calls = {c["model_call_id"]: c for c in trajectory["model_calls"]}
        for chat in chats:
            call = calls[chat.attributes["evidence_stage.model_call.id"]]
            assert (chat.start_ns, chat.end_ns) == (round(call["started_at"] * 1e6) * 1000, round(call["completed_at"] * 1e6) * 1000)
            assert chat.attributes.get("gen_ai.response.id") == call["response_metadata"]["response_id"]
            assert spans[chat.parent_id].attributes["gen_ai.operation.name"] == "invoke_agent"
        for tool in by_op.get("execute_tool", []):
            owner = spans[tool.parent_id]
            record = next(
                t
                for t in trajectory["tool_calls"]
                if t["tool_call_id"] == tool.attributes["gen_ai.tool.call.id"]
                and t["invocation_id"] == owner.attributes["evidence_stage.invocation.id"]
            )
            assert tool.attributes.get("evidence_stage.tool.duration_ms") == record["duration_ms"]
        for invocation in trajectory["invocations"]:
            span = invocation_span[invocation["invocation_id"]]
            parent = invocation["parent_invocation_id"]
            if parent is None:
                assert span.parent_id is None
                continue
            holder = spans[span.parent_id]
            spawned = holder.attributes.get("gen_ai.tool.call.id") == invocation["spawned_by_tool_call_id"]
            assert spawned or holder.attributes.get("evidence_stage.invocation.id") == parent
            descendants = [s for s in trace.spans if s.start_ns is not None and _under(s, span, spans)]
            assert span.start_ns == min(s.start_ns for s in descendants)
    assert trace_ids, "the sample has traces"


def _under(span: Any, ancestor: Any, spans: dict[bytes, Any]) -> bool:
    while span.parent_id is not None:
        span = spans[span.parent_id]
        if span is ancestor:
            return True
    return False


def test_ids_are_the_same_on_every_export_and_differ_between_runs() -> None:
    row = sample_rows("hostile_job")[0]
    first, again = rollout_trace(row, identity(1)), rollout_trace(row, identity(1))
    other_run = rollout_trace(row, TraceIdentity("sample-job", "another-run", "main:1"))
    assert isinstance(first, TraceModel)
    assert first == again
    assert isinstance(other_run, TraceModel)
    assert other_run.trace_id != first.trace_id
    assert {s.span_id for s in other_run.spans}.isdisjoint({s.span_id for s in first.spans})


def _row(**trajectory: Any) -> dict[str, Any]:
    base = {
        "schema_version": "1.0",
        "task_id": "7",
        "rollout_id": "7-0",
        "invocations": [],
        "turns": [],
        "model_calls": [],
        "tool_calls": [],
        "gaps": [],
    }
    return {"agent_ref": {"name": "agent"}, "ng_trajectory": {**base, **trajectory}}


def test_nothing_is_invented_for_missing_times_and_counts() -> None:
    call = {"model_call_id": "c1", "response_metadata": {"response_id": "r1"}}
    tool = {"kind": "tool_call", "invocation_id": "root", "tool_call_id": "t1"}
    invocation = {"invocation_id": "root", "model_calls": [{"model_call_id": "c1"}]}
    trace = rollout_trace(_row(invocations=[invocation], model_calls=[call], tool_calls=[tool]), identity(1))
    assert isinstance(trace, TraceModel)
    root, chat, run_tool = trace.spans
    assert (root.start_ns, root.end_ns, chat.start_ns, chat.end_ns, run_tool.start_ns, run_tool.end_ns) == (None,) * 6
    assert dict(chat.attributes) == {"gen_ai.operation.name": "chat", "gen_ai.response.id": "r1", "evidence_stage.model_call.id": "c1"}
    assert dict(run_tool.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.call.id": "t1",
        "evidence_stage.tool.status": "unknown",
    }
    assert (root.name, chat.name, run_tool.name) == ("invoke_agent agent", "chat", "execute_tool")


def test_unowned_calls_get_no_span_and_rows_without_evidence_say_why() -> None:
    calls = [{"model_call_id": "mine"}, {"model_call_id": "judge"}]
    trace = rollout_trace(
        _row(invocations=[{"invocation_id": "root", "model_calls": [{"model_call_id": "mine"}]}], model_calls=calls), identity(1)
    )
    assert isinstance(trace, TraceModel)
    assert [s.attributes.get("evidence_stage.model_call.id") for s in trace.spans] == [None, "mine"]
    assert rollout_trace({"reward": 1.0}, identity(2)) == TraceSkipped("no ng_trajectory")
    assert rollout_trace({"ng_trajectory": {"task_id": 3}}, identity(3)) == TraceSkipped("ng_trajectory does not validate")
    assert rollout_trace(_row(model_calls=calls), identity(4)) == TraceSkipped("ng_trajectory has no invocations")


def test_a_parent_cycle_makes_roots_instead_of_losing_spans() -> None:
    invocations = [
        {"invocation_id": "a", "parent_invocation_id": "b"},
        {"invocation_id": "b", "parent_invocation_id": "c"},
        {"invocation_id": "c", "parent_invocation_id": "b"},
        {"invocation_id": "d", "parent_invocation_id": "missing"},
    ]
    trace = rollout_trace(_row(invocations=invocations), identity(1))
    assert isinstance(trace, TraceModel)
    parent_of = {s.attributes["evidence_stage.invocation.id"]: s.parent_id for s in trace.spans}
    span_of = {s.attributes["evidence_stage.invocation.id"]: s.span_id for s in trace.spans}
    assert len(trace.spans) == 4
    assert parent_of["b"] is None
    assert parent_of["c"] is None
    assert parent_of["d"] is None
    assert parent_of["a"] == span_of["b"]


def test_failed_calls_tools_and_invocations_are_error_spans() -> None:
    call = {
        "model_call_id": "c1",
        "response_metadata": {"status_code": 429, "error_category": "rate_limit", "finish_reason": "length", "model": "m"},
    }
    tool = {
        "kind": "tool_call",
        "invocation_id": "root",
        "tool_call_id": "t1",
        "tool_name": "bash",
        "status": "timeout",
        "error_type": "Timeout",
    }
    invocation = {"invocation_id": "root", "status": "failed", "error_type": "Crash", "model_calls": [{"model_call_id": "c1"}]}
    trace = rollout_trace(_row(invocations=[invocation], model_calls=[call], tool_calls=[tool]), identity(1))
    assert isinstance(trace, TraceModel)
    root, chat, run_tool = trace.spans
    assert (root.status, chat.status, run_tool.status) == ("error", "error", "error")
    assert (root.attributes["error.type"], chat.attributes["error.type"], run_tool.attributes["error.type"]) == (
        "Crash",
        "rate_limit",
        "Timeout",
    )
    assert chat.attributes["http.response.status_code"] == 429
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("length",)
    assert (chat.name, run_tool.name) == ("chat m", "execute_tool bash")


@pytest.mark.parametrize("job", JOBS)
def test_each_trace_carries_its_rows_reward_and_verdict_on_its_root_span(job: str) -> None:
    lines = [
        json.loads(line) for line in (SAMPLES / f"{job}.expected" / "health" / "rollout_verdicts.jsonl").read_text("utf-8").splitlines()
    ]
    by_key: dict[tuple[Any, Any], list[tuple[str, bool]]] = {}
    for line in lines:  # an independent reading: the sample's rows carry int task and rollout indices
        by_key.setdefault((line["_ng_task_index"], line["_ng_rollout_index"]), []).append((line["verdict"], bool(line["findings"])))
    rows = sample_rows(job)
    checked = 0
    for (line, trace), row in zip(sample_traces(job), rows, strict=True):
        if isinstance(trace, TraceSkipped):
            by_key.get((row.get("_ng_task_index"), row.get("_ng_rollout_index")), [None]).pop(0)
            continue
        root, *rest = trace.spans
        assert all(not span.events for span in rest), line
        events = {e.attributes["gen_ai.evaluation.name"]: e for e in root.events}
        assert all(e.name == "gen_ai.evaluation.result" and e.time_ns == root.end_ns for e in root.events)
        reward = row.get("reward")
        if isinstance(reward, (int, float)):
            assert events["reward"].attributes == {"gen_ai.evaluation.name": "reward", "gen_ai.evaluation.score.value": float(reward)}
        else:
            assert "reward" not in events
        verdict, findings = by_key[(row["_ng_task_index"], row["_ng_rollout_index"])].pop(0)
        assert events["health"].attributes["gen_ai.evaluation.score.label"] == verdict, line
        assert ("gen_ai.evaluation.explanation" in events["health"].attributes) == findings, line
        checked += 1
    assert checked


def test_verdicts_go_to_rows_by_identity_in_order_and_only_once() -> None:
    lines = [
        {"_ng_task_index": 1, "_ng_rollout_index": 0, "verdict": "healthy", "findings": []},
        {"_ng_task_index": 1, "_ng_rollout_index": 0, "verdict": "unhealthy", "findings": [{"check": "a"}, {"check": "b"}, {"check": "a"}]},
        {"_ng_task_index": "x", "_ng_rollout_index": 2, "stage_index": 1, "verdict": "unobserved", "findings": []},
    ]
    verdicts = RolloutVerdicts(lines)
    first, second = (
        verdicts.take({"_ng_task_index": 1, "_ng_rollout_index": 0}, 0),
        verdicts.take({"_ng_task_index": 1.0, "_ng_rollout_index": False}, 1),
    )
    assert (first.verdict, first.explanation) == ("healthy", None)
    assert (second.verdict, second.explanation) == ("unhealthy", "a (2), b (1)")  # 0.7.0's digest coerces 1.0 and False
    assert verdicts.take({"_ng_task_index": 1, "_ng_rollout_index": 0}, 2) is None  # each line once
    assert verdicts.take({"_ng_task_index": "x", "_ng_rollout_index": 2}, 3) is None  # the stage is part of the identity
    assert verdicts.take({"_ng_task_index": "x", "_ng_rollout_index": 2, "stage_index": 1}, 3).verdict == "unobserved"
    assert verdicts.take({"_ng_task_index": [1]}, 4) is None  # an identity 0.7.0 refuses has no line


@pytest.mark.parametrize(("reward", "value"), [(True, 1.0), (0, 0.0), (0.25, 0.25), ("1", None), (None, None), (10**400, None)])
def test_the_reward_event_holds_a_finite_number_or_is_absent(reward: Any, value: float | None) -> None:
    invocation = {"invocation_id": "root"}
    trace = rollout_trace({**_row(invocations=[invocation]), "reward": reward}, identity(1))
    assert isinstance(trace, TraceModel)
    scores = [
        e.attributes["gen_ai.evaluation.score.value"] for e in trace.spans[0].events if e.attributes["gen_ai.evaluation.name"] == "reward"
    ]
    assert scores == ([] if value is None else [value])
    assert all(e.attributes["gen_ai.evaluation.name"] != "health" for e in trace.spans[0].events)  # no verdict given
