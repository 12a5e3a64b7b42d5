"""Tolerant capture reading, record derivation and token normalisation (collection.md §3.3, §4)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evidence.capture import read_capture
from evidence.models.capture import ModelCallRecord


def line(**exchange: Any) -> bytes:
    """One capture line; the stdlib writes integers beyond 64 bits exactly, as the tests need."""
    return json.dumps({"model_call_id": "m", "dialect": "responses", **exchange}).encode()


def only(data: bytes) -> ModelCallRecord:
    records, invalid = read_capture(data)
    assert invalid == 0
    assert len(records) == 1
    return records[0]


def test_blank_lines_consume_no_index_and_damage_consumes_one() -> None:
    data = b"\n   \n" + line() + b"\r\n\x0b\n{broken\n" + line() + b"\n\t\n"
    records, invalid = read_capture(data)
    assert [record.call_index for record in records] == [0, 2]
    assert invalid == 1


@pytest.mark.parametrize(
    "bad",
    [
        b"\xef\xbb\xbf" + line(),
        b'{"a": NaN}',
        b'{"a": 1e400}',
        b'{"a": "\\ud800"}',
        b"[1]",
        b"null",
        b'"text"',
        b"42",
        b"\xff\xfe",
        b'{"model_call_id": 5}',
        b'{"model_ref": "policy"}',
        b'{"response_source": "cache"}',
        b'{"started_at": "yesterday"}',
        b'{"response": {"output": [{"type": "reasoning", "summary": 5}]}}',
        b'{"response": {"choices": [{"message": {"tool_calls": 7}}]}}',
    ],
)
def test_unusable_lines_are_counted(bad: bytes) -> None:
    records, invalid = read_capture(bad + b"\n" + line())
    assert invalid == 1
    assert [record.call_index for record in records] == [1]


def test_lone_carriage_return_does_not_split() -> None:
    records, invalid = read_capture(line() + b"\r" + line())
    assert (records, invalid) == ([], 1)


def test_lax_coercion_of_exchange_fields() -> None:
    record = only(
        line(
            status_code="200",
            started_at=1767225610,
            latency_ms="12.5",
            upstream_attempted="true",
            upstream_status_code="502",
            client_session_id=99,
            model_ref={"type": "responses_api_models", "name": "p", "extra": 1},
        )
    )
    assert (record.status_code, record.started_at, record.latency_total_ms) == (200, 1767225610.0, 12.5)
    assert type(record.started_at) is float
    assert (record.upstream_attempted, record.upstream_status_code, record.client_session_id) == (True, 502, None)
    assert record.as_call(include_payloads=False)["model_ref"] == {"type": "responses_api_models", "name": "p"}


def test_non_finite_latencies_survive() -> None:
    record = only(line(latency_ms="inf", latency_ttft_ms="nan"))
    assert record.latency_total_ms == float("inf")
    assert record.latency_ttft_ms != record.latency_ttft_ms


def test_as_call_equals_python_mode_dump_and_drops_payloads() -> None:
    record = only(line(request={"model": "x"}, response={"id": "r", "output": []}, response_raw="data: {}"))
    assert record.as_call(include_payloads=True) == record.model_dump()
    assert list(record.as_call(include_payloads=True)) == list(ModelCallRecord.model_fields)
    without = record.as_call(include_payloads=False)
    assert not {"request", "response", "request_raw", "response_raw"} & set(without)


def usage_record(usage: Any) -> ModelCallRecord:
    return only(line(response={"usage": usage}))


def tokens(record: ModelCallRecord) -> tuple[Any, ...]:
    return (
        record.tokens_in,
        record.tokens_out,
        record.tokens_reasoning,
        record.tokens_total,
        record.cached_tokens,
        record.cache_hit,
        record.cache_creation_tokens,
    )


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            {
                "input_tokens": 120,
                "input_tokens_details": {"cached_tokens": 64},
                "output_tokens": 40,
                "output_tokens_details": {"reasoning_tokens": 25},
                "total_tokens": 160,
            },
            (120, 40, 25, 160, 64, True, None),
        ),
        (
            {"prompt_tokens": 8, "completion_tokens": 2, "cached_input_tokens": 0, "reasoning_output_tokens": 1},
            (8, 2, 1, 10, 0, False, None),
        ),
        (
            {"input_tokens": 5, "prompt_tokens": 9, "output_tokens": -1, "completion_tokens": 3, "total_tokens": "8"},
            (5, 3, None, 8, None, None, None),
        ),
        (
            {"input_tokens": 100, "cache_read_input_tokens": 200, "cache_creation_input_tokens": 30, "output_tokens": 50},
            (330, 50, None, 380, 200, True, 30),
        ),
        ({"cache_read_input_tokens": 500, "cache_creation_input_tokens": 0}, (500, None, None, None, 500, True, 0)),
        ({"cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}, (None, None, None, None, 0, False, 0)),
        (
            {"input_tokens": 1.0, "output_tokens": True, "total_tokens": 18446744073709551615},
            (None, None, None, 18446744073709551615, None, None, None),
        ),
        ({"input_tokens": 18446744073709551616, "output_tokens": 1}, (None, 1, None, None, None, None, None)),
        (
            {"prompt_tokens_details": {"cached_input_tokens": 7}, "input_tokens_details": {"cached_tokens": 9}},
            (None, None, None, None, 7, True, None),
        ),
        ({"input_tokens": 1, "output_tokens": 1, "total_tokens": 99}, (1, 1, None, 99, None, None, None)),
        ("not usage", (None, None, None, None, None, None, None)),
    ],
)
def test_token_normalisation(usage: Any, expected: tuple[Any, ...]) -> None:
    assert tokens(usage_record(usage)) == expected


def test_big_integer_literals_parse_as_floats_like_orjson() -> None:
    record = only(b'{"response": {"usage": {"input_tokens": 18446744073709551616, "output_tokens": 18446744073709551615}}}')
    assert (record.tokens_in, record.tokens_out) == (None, 18446744073709551615)


def test_responses_tool_calls_and_reasoning() -> None:
    output = [
        {"type": "function_call", "id": "fc1", "name": "f", "arguments": '{"a": 1}'},
        {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "not json"},
        {"type": "function_call", "call_id": "c3", "name": "h", "arguments": "[1, 2]"},
        {"type": "function_call", "call_id": "c4", "name": "i", "arguments": 5},
        {"type": "reasoning", "summary": [{"text": "a"}, {"text": ""}, "x", {"text": "b"}]},
        "not an item",
    ]
    record = only(line(response={"output": output}))
    assert record.tool_calls == [
        {"call_id": "fc1", "name": "f", "arguments": {"a": 1}},
        {"call_id": "c2", "name": "g", "arguments": {"_raw": "not json"}},
        {"call_id": "c3", "name": "h", "arguments": [1, 2]},
        {"call_id": "c4", "name": "i", "arguments": {}},
    ]
    assert record.reasoning_content == "a\nb"


def test_chat_tool_calls_reasoning_and_finish_reason() -> None:
    choices = [
        {
            "message": {
                "reasoning_content": "r1",
                "tool_calls": [{"id": "t1", "function": {"name": "f", "arguments": "{}"}}, {"id": "t2", "function": "bad"}, 3],
            },
            "finish_reason": "tool_calls",
        },
        {"message": {"reasoning_content": {"x": 1}, "reasoning": "suppressed"}},
        {"message": {"reasoning": "r2"}},
    ]
    record = only(line(response={"choices": choices, "model": ""}, request={"model": "req-model"}))
    assert record.tool_calls == [{"call_id": "t1", "name": "f", "arguments": {}}, {"call_id": "t2", "name": None, "arguments": {}}]
    assert (record.reasoning_content, record.finish_reason, record.model) == ("r1\nr2", "tool_calls", "req-model")


def test_anthropic_blocks_are_read_by_shape() -> None:
    content = [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "redacted_thinking", "data": "x"},
        {"type": "tool_use", "id": "tu1", "name": "bash", "input": {"cmd": "ls"}},
        {"type": "tool_use", "id": "tu2", "name": "noop"},
    ]
    record = only(line(dialect="chat", response={"content": content, "stop_reason": "tool_use", "id": 5}))
    assert record.tool_calls == [
        {"call_id": "tu1", "name": "bash", "arguments": {"cmd": "ls"}},
        {"call_id": "tu2", "name": "noop", "arguments": {}},
    ]
    assert (record.reasoning_content, record.finish_reason, record.response_id) == ("hmm", "tool_use", None)


def test_incomplete_details_reason_is_the_last_finish_signal() -> None:
    record = only(line(response={"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}))
    assert (record.response_status, record.finish_reason) == ("incomplete", "max_output_tokens")


def test_non_object_bodies_become_raw_or_null() -> None:
    record = only(line(request="raw body", response=["x"], request_raw="raw body", response_raw=5))
    assert (record.request, record.response, record.request_raw, record.response_raw) == (None, None, "raw body", None)
