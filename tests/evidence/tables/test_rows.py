"""One attempt's table rows: shapes and types that never depend on the data, counts equal to the row's lists, the joins."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from evidence import verdict_order as health_verdict_order
from evidence.health.digest import RowDigest, RowStats
from evidence.tables import (
    NO_ATIF,
    NO_VERDICT,
    TABLES,
    AttemptIdentity,
    RowFacts,
    atif_columns,
    finding_rows,
    rollout_row,
    row_facts,
    verdict_columns,
    verdict_line_order,
    verdict_order,
)
from tests.conftest import SAMPLES

EXTRACTED = len(TABLES["rollouts"].columns) - len(NO_ATIF) - len(NO_VERDICT)
IDENTITY = AttemptIdentity("job", "run", "main:7", 0, "rollouts.jsonl", "main", 7, 5, "3-1", "ok", size=123)
CHECKS = {
    "string": lambda v: isinstance(v, str),
    "int32": lambda v: isinstance(v, int) and not isinstance(v, bool) and -(2**31) <= v < 2**31,
    "int64": lambda v: isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63,
    "double": lambda v: isinstance(v, float),
    "bool": lambda v: isinstance(v, bool),
    "list<string>": lambda v: isinstance(v, list) and all(x is None or isinstance(x, str) for x in v),
    "map<string,double>": lambda v: isinstance(v, list) and all(isinstance(k, str) and isinstance(x, float) for k, x in v),
}


@dataclass(frozen=True)
class _Rows:
    rollout: tuple[Any, ...]
    turns: list[tuple[Any, ...]]
    model_calls: list[tuple[Any, ...]]
    tool_calls: list[tuple[Any, ...]]
    gaps: list[tuple[Any, ...]]


def attempt_rows(row: Any, identity: AttemptIdentity) -> _Rows:
    """Every table row of one attempt as the sinks write them: the facts around the identity, the child rows under its keys."""
    facts = row_facts(row)
    assert RowFacts.from_json(orjson.loads(orjson.dumps(facts.to_json()))) == facts  # what a part carries reads back equal

    def keyed(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        return [(*identity.keys, *values) for values in rows]

    return _Rows(rollout_row(facts, identity), keyed(facts.turns), keyed(facts.model_calls), keyed(facts.tool_calls), keyed(facts.gaps))


def _typed(table: str, row: tuple[Any, ...]) -> None:
    columns = TABLES[table].columns[: len(row)]
    assert len(row) == len(columns), table
    for column, value in zip(columns, row, strict=True):
        if value is None:
            assert column.nullable, f"{table}.{column.name} is required"
        else:
            assert CHECKS[column.type](value), f"{table}.{column.name}: {value!r} is no {column.type}"


def _sample_rows() -> Iterator[tuple[str, dict[str, Any]]]:
    for job in ("realistic_job", "hostile_job"):
        for name in ("rollouts.jsonl", "rollouts_failures.jsonl"):
            path = SAMPLES / f"{job}.expected" / name
            if path.exists():
                for line in path.read_bytes().splitlines():
                    yield f"{job}/{name}", orjson.loads(line)


def test_every_sample_row_gives_typed_rows_and_one_row_per_list_entry() -> None:
    seen = 0
    for _, row in _sample_rows():
        made = attempt_rows(row, IDENTITY)
        _typed("rollouts", made.rollout)
        assert len(made.rollout) == EXTRACTED
        trajectory = row.get("ng_trajectory")
        lists = trajectory if isinstance(trajectory, dict) else {}
        for table, rows in (("turns", made.turns), ("model_calls", made.model_calls), ("tool_calls", made.tool_calls), ("gaps", made.gaps)):
            for each in rows:
                _typed(table, each)
                assert each[:4] == IDENTITY.keys
            if table != "gaps":
                assert len(rows) == len(lists.get(table) or []), table
        seen += 1
    assert seen == 23 + 41 + 6


@pytest.mark.parametrize("job", ["realistic_job", "hostile_job"])
def test_verdict_order_pairs_each_main_row_with_its_verdict_line(job: str) -> None:
    """health writes its lines sorted by identity, equal identities in row order: so do we sort the rows."""
    rows = [orjson.loads(line) for line in (SAMPLES / f"{job}.expected" / "rollouts.jsonl").read_bytes().splitlines()]
    verdicts = [
        orjson.loads(line) for line in (SAMPLES / f"{job}.expected" / "health" / "rollout_verdicts.jsonl").read_bytes().splitlines()
    ]
    ordered = sorted(range(len(rows)), key=lambda i: verdict_order(rows[i], i + 1))
    assert [verdict_order(rows[i], i + 1) for i in ordered] == [verdict_line_order(v) for v in verdicts]
    for i, verdict in zip(ordered, verdicts, strict=True):
        assert verdict["rollout_id"] in {
            rows[i].get("ng_trajectory", {}).get("rollout_id"),
            f"{rows[i]['_ng_task_index']}-{rows[i]['_ng_rollout_index']}",
        }


def test_a_main_row_whose_identity_is_nested_past_the_recursion_limit_sorts_as_unreadable() -> None:
    """Issue 45: the health identity's rollout id is ``str()`` of the raw task index, and a task
    nested 1,000 levels made the tables' rebuild raise RecursionError instead of ordering the row."""
    row = orjson.loads(b'{"_ng_task_index": ' + b"[" * 1000 + b"]" * 1000 + b', "_ng_rollout_index": 0}')
    assert verdict_order(row, 3) == ((1, "__unreadable_record__:input-0:line-3"), (0, 0), (1, "None"))


def test_verdict_order_is_healths_order() -> None:
    for task, rollout, stage in [(3, 1, None), ("b", 2, 1), (True, 0, "x"), (10, "a", None)]:
        digest = RowDigest(task, rollout, stage, "id", (), (), RowStats())
        assert verdict_line_order({"_ng_task_index": task, "_ng_rollout_index": rollout, "stage_index": stage}) == health_verdict_order(
            digest
        )


def test_an_undecodable_or_untypable_row_sorts_as_health_reports_it() -> None:
    unreadable = verdict_line_order({"_ng_task_index": "__unreadable_record__:input-0:line-5", "_ng_rollout_index": 0})
    assert verdict_order(None, 5) == unreadable
    assert verdict_order({"_ng_task_index": [1], "_ng_rollout_index": 0}, 5) == unreadable
    assert verdict_order({"_ng_rollout_index": 2}, 5) == verdict_line_order(
        {"_ng_task_index": 4, "_ng_rollout_index": 2}
    )  # ordinal fallback


def test_no_row_gives_nulls_and_no_children() -> None:
    made = attempt_rows(None, IDENTITY)
    _typed("rollouts", made.rollout)
    values = dict(zip(TABLES["rollouts"].names[:EXTRACTED], made.rollout, strict=True))
    assert values["has_trajectory"] is False
    assert values["gap_count"] == 0
    assert values["turn_count"] is None
    assert values["bytes"] == 123
    assert values["metrics"] == []
    assert (made.turns, made.model_calls, made.tool_calls, made.gaps) == ([], [], [], [])


def test_values_of_the_wrong_type_are_null_and_every_entry_is_a_row() -> None:
    row = {
        "reward": True,
        "resolved": "yes",
        "big": 2**70,
        "huge": 10**400,
        "name": "x",
        "nested": {"a": 1},
        "_ng_task_index": "7",
        "agent_ref": ["not", "an", "object"],
        "ng_perf": {"num_turns": 2.0, "prompt_tokens": True, "total_latency_ms": 12},
        "ng_model_call_capture": {"calls": "none", "gaps": [{"code": 5}, "oops", {"code": "model_call_capture_incomplete"}]},
        "ng_trajectory": {
            "task_id": 7,
            "turns": [None, {"turn_no": "1", "timestamp": 1, "answer": "a", "question": [1, 2]}],
            "model_calls": ["x", {"token_stats": {"prompt_tokens": -1.5}, "response_metadata": {"status_code": "500"}}],
            "tool_calls": {"not": "a list"},
            "gaps": [{"code": "not_a_registered_code", "detail": {"n": 1}}],
        },
    }
    made = attempt_rows(row, IDENTITY)
    _typed("rollouts", made.rollout)
    values = dict(zip(TABLES["rollouts"].names[:EXTRACTED], made.rollout, strict=True))
    assert (values["reward"], values["resolved"], values["task_index"], values["agent"], values["task_id"]) == (1.0, None, None, None, None)
    assert values["metrics"] == [("reward", 1.0), ("big", float(2**70))]
    assert (values["perf_num_turns"], values["perf_prompt_tokens"], values["perf_total_latency_ms"]) == (None, None, 12.0)
    assert values["capture_call_count"] is None
    assert values["capture_gaps"] == [None, None, "model_call_capture_incomplete"]
    assert (values["turn_count"], values["model_call_count"], values["tool_call_count"], values["gap_count"]) == (2, 2, 0, 4)
    for table, rows in (("turns", made.turns), ("model_calls", made.model_calls), ("gaps", made.gaps)):
        for each in rows:
            _typed(table, each)
    assert made.turns[1][4:] == (1, None, None, 1.0, None, None, True, False, 2, None)
    successful = TABLES["model_calls"].names.index("successful")
    assert made.model_calls[1][successful] is False  # a status code of "500" is no integer: neither failed nor 2xx, as health reads it
    assert made.model_calls[1][TABLES["model_calls"].names.index("prompt_tokens")] is None
    assert [g[4:] for g in made.gaps] == [
        ("ng_model_call_capture", 0, None, False, None, None),
        ("ng_model_call_capture", 1, None, False, None, "oops"),
        ("ng_model_call_capture", 2, "model_call_capture_incomplete", True, None, None),
        ("ng_trajectory", 0, "not_a_registered_code", False, None, '{"n":1}'),
    ]


def _ref(call_id: str | None = None, response_id: str | None = None) -> dict[str, Any]:
    ref: dict[str, Any] = {"model_ref": {"type": "responses_api_models", "name": "policy"}}
    if call_id is not None:
        ref["model_call_id"] = call_id
    if response_id is not None:
        ref["response_id"] = response_id
    return ref


def _call(call_id: str, response_id: str, tokens: int) -> dict[str, Any]:
    meta = {"response_id": response_id, "model_ref": {"type": "responses_api_models", "name": "policy"}, "model": "m", "status_code": 200}
    return {"model_call_id": call_id, "response_metadata": meta, "token_stats": {"prompt_tokens": tokens, "completion_tokens": 1}}


def test_model_calls_name_their_owner_by_ng_perfs_rule_and_the_first_turn_naming_them_alone() -> None:
    trajectory = {
        "task_id": "3",
        "invocations": [
            {"invocation_id": "parent", "model_calls": [_ref("c1"), _ref(response_id="r2"), _ref("c1")]},
            {"invocation_id": "child", "model_calls": [_ref("c1"), _ref("c3")]},
        ],
        "turns": [
            {"invocation_id": "parent", "turn_no": 1, "model_calls": [_ref("c1")]},
            {"invocation_id": "parent", "turn_no": 2, "model_calls": [_ref(response_id="r2"), _ref("c1")]},
            {"invocation_id": "child", "turn_no": 1, "model_calls": [_ref("c3")]},
        ],
        "model_calls": [_call("c1", "r1", 10), _call("c2", "r2", 20), _call("c3", "r3", 30), _call("judge", "r4", 40)],
    }
    calls = attempt_rows({"ng_trajectory": trajectory}, IDENTITY).model_calls
    names = TABLES["model_calls"].names
    picked = [
        {k: c[names.index(k)] for k in ("call_index", "model_call_id", "invocation_id", "owned", "turn_index", "turn_no", "prompt_tokens")}
        for c in calls
    ]
    assert picked == [
        {
            "call_index": 0,
            "model_call_id": "c1",
            "invocation_id": "parent",
            "owned": True,
            "turn_index": 0,
            "turn_no": 1,
            "prompt_tokens": 10,
        },
        {
            "call_index": 1,
            "model_call_id": "c2",
            "invocation_id": "parent",
            "owned": True,
            "turn_index": 1,
            "turn_no": 2,
            "prompt_tokens": 20,
        },
        {
            "call_index": 2,
            "model_call_id": "c3",
            "invocation_id": "child",
            "owned": True,
            "turn_index": 2,
            "turn_no": 1,
            "prompt_tokens": 30,
        },
        {
            "call_index": 3,
            "model_call_id": "judge",
            "invocation_id": None,
            "owned": False,
            "turn_index": None,
            "turn_no": None,
            "prompt_tokens": 40,
        },
    ]


def test_findings_carry_the_checks_subject_and_their_locator() -> None:
    verdict = {
        "_ng_task_index": 3,
        "_ng_rollout_index": 1,
        "verdict": "unhealthy",
        "findings": [
            {"check": "agent_turn_hollow", "locator": {"turn": 2}, "detail": {"reason": "agent turn has no message or tool calls"}},
            {"check": "model_call_failed", "locator": {"call_id": "c9"}, "detail": {"status_code": 500}},
            {"check": "rollout_duplicate_identity", "detail": {"reason": "dup", "count": 2}},
            {"check": "not_a_check", "detail": "text"},
        ],
        "unobserved": ["model_call_runaway_generation"],
    }
    rows = finding_rows(verdict, IDENTITY.keys)
    for each in rows:
        _typed("findings", each)
    assert [r[4:] for r in rows] == [
        (
            0,
            "agent_turn_hollow",
            "agent_turn",
            '{"turn":2}',
            2,
            None,
            '{"reason":"agent turn has no message or tool calls"}',
            "agent turn has no message or tool calls",
        ),
        (1, "model_call_failed", "model_call", '{"call_id":"c9"}', None, "c9", '{"status_code":500}', None),
        (2, "rollout_duplicate_identity", "rollout", None, None, None, '{"reason":"dup","count":2}', "dup"),
        (3, "not_a_check", None, None, None, None, "text", None),
    ]
    assert verdict_columns(verdict) == ("unhealthy", 4, ["model_call_runaway_generation"])
    assert verdict_columns(None) == NO_VERDICT
    assert finding_rows(None, IDENTITY.keys) == []


def test_atif_columns() -> None:
    assert atif_columns("3-1.json", None) == ("exported", "3-1.json", None)
    assert atif_columns(None, "duplicate Gym rollout key (3, 1)") == ("refused", None, "duplicate Gym rollout key (3, 1)")
    assert atif_columns(None, None) == ("withheld", None, None)
