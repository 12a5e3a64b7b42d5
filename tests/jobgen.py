"""Deterministic generator of NeMo Gym 0.7.0 evaluation jobs, for tests and benchmarks.

A job is what `gym eval run` with observability on leaves on disk: `rollouts.jsonl`,
`rollouts_failures.jsonl` (failed attempts) and `model-calls/<rollout_id>.capture.jsonl`
(one exchange per line, `responses` / `chat` / `messages` dialects, growing histories).
Everything comes from one seeded `random.Random`, so a seed always gives the same bytes.

`realistic` mode mimics a normal job: tasks x repeats over six agents, tool calls,
reasoning, observation bundles, producer trajectories, failed and retried attempts, one
incomplete marker, one capture file whose last line was cut mid-write and one orphan capture
file. `hostile` mode (at least 24 rollouts, 2 calls per rollout) adds the damage a stage must
survive, including a capture line over 5 MB. Every oddity is listed in `JobInfo.planted`, kinds:

  failed_attempt, incomplete_marker, truncated_capture_line, orphan_capture,
  non_object_capture_line, invalid_utf8_capture_line, bom_capture_line, nan_capture_line,
  blank_capture_line, huge_capture_line, missing_capture, missing_identity,
  invalid_identity, path_traversal_id, traversal_bait, duplicate_identity,
  invalid_observations, stale_no_records, blank_line, non_object_line,
  malformed_json_line, invalid_utf8_line

Size: `history_bytes` is the typical tool output, so each request grows by about that much
per turn. With the defaults (8 calls, 2,000 bytes) 2,000 rollouts make about 450 MB in about
5 s on two cores; the whole job is built in memory before it is written.

Score options (for aggregate-metrics checks; off by default, and a job made without them
is byte for byte what it was before they existed): `repeats` rollouts per task (default 4),
`reward_kinds` (each main row's `reward` becomes a float, an int, a bool or is removed,
drawn per row), `servers` (every row of task t is stamped `_ng_environment_server`
`env_server_<t % servers>`, so servers hold several agents and agents span servers) and
`mask_fraction` (that share of main rows gets `mask_sample: true`). They draw from their
own seeded generator, after the job is planned.

Usage: python tests/jobgen.py OUT_DIR --rollouts N [--calls-per-rollout K]
       [--history-bytes B] [--mode realistic|hostile] [--seed S] [--failures-fraction F]
       [--repeats R] [--reward-kinds float,int,bool,missing] [--servers N] [--mask-fraction F]
"""

from __future__ import annotations

import argparse
import copy
import math
import posixpath
import random
import shutil
import string
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

REPEATS = 4
REWARD_KINDS = ("float", "int", "bool", "missing")
HUGE_LINE_BYTES = 5 * 1024 * 1024 + 4096
_CAPTURE_DIR = "model-calls"
_GENERATED = ("rollouts.jsonl", "rollouts_failures.jsonl", _CAPTURE_DIR)
_ALNUM = string.ascii_letters + string.digits
_WORDS = [
    "the",
    "a",
    "value",
    "index",
    "record",
    "schema",
    "tensor",
    "batch",
    "cache",
    "offset",
    "patch",
    "retry",
    "stream",
    "module",
    "request",
    "response",
    "token",
    "layer",
    "gradient",
    "import",
    "export",
    "client",
    "server",
    "thread",
    "queue",
    "table",
    "column",
    "matrix",
    "verify",
    "check",
    "fix",
    "tests",
    "fields",
    "keys",
    "method",
    "return",
    "option",
    "arguments",
    "error",
    "because",
    "however",
    "maybe",
    "should",
    "must",
    "could.",
    "again?",
    "only!",
    "first,\nnaïve",
    "résumé",
    "Größe",
    "λ",
    "∑",
    "µs",
    "模型",
    "训练",
    "проверка",
    "δοκιμή",
    "مرحبا",
    "한국어",
    "日本語",
    "📦",
    "données",
]
_POLICY, _ANTHROPIC, _JUDGE = "policy_model", "anthropic_model", "judge_model"
_MODELS = {_POLICY: "Qwen/Qwen3-235B-A22B-Thinking-2507", _ANTHROPIC: "claude-sonnet-4-5-20250929", _JUDGE: "gpt-4.1-2025-04-14"}
# name -> (dialect, model server, evidence the agent leaves in its row)
_AGENTS = (
    ("simple_agent", "responses", _POLICY, "producer"),
    ("chat_agent", "chat", _POLICY, "hermes"),
    ("harness_agent", "responses", _POLICY, "harness"),
    ("plain_agent", "responses", _POLICY, "judge"),
    ("claude_code_agent", "messages", _ANTHROPIC, "claude_code"),
    ("claude_agent_sdk", "messages", _ANTHROPIC, "producer"),
)
_TOOLS = {
    "bash": (
        "Run a shell command inside the task sandbox and return combined stdout and stderr.",
        {
            "command": {"type": "string", "description": "The command line to execute."},
            "timeout": {"type": "integer", "description": "Seconds before the command is killed."},
        },
        ["command"],
    ),
    "python": ("Execute a Python snippet in a persistent interpreter and return its output.", {"code": {"type": "string"}}, ["code"]),
    "read_file": (
        "Read a range of lines from a UTF-8 text file in the workspace.",
        {"path": {"type": "string"}, "start_line": {"type": "integer"}, "end_line": {"type": "integer"}},
        ["path"],
    ),
    "write_file": (
        "Create or overwrite a file in the workspace with the given content.",
        {"path": {"type": "string"}, "content": {"type": "string"}},
        ["path", "content"],
    ),
    "search": (
        "Search the repository for a regular expression and return matching lines.",
        {"query": {"type": "string"}, "path": {"type": "string"}},
        ["query"],
    ),
    "web_fetch": ("Fetch a URL from the offline documentation mirror and return its text.", {"url": {"type": "string"}}, ["url"]),
}


@dataclass(frozen=True)
class PlantedInput:
    """One deliberate oddity: `path` is relative to the job root, `line` is 1-based or None."""

    kind: str
    path: str
    line: int | None = None
    rollout_id: str | None = None


@dataclass(frozen=True)
class JobInfo:
    """What was written and every planted oddity.

    `main_rows`/`failure_rows` count JSON-object lines; `capture_files`/`exchanges` count the
    `.capture.jsonl` files in the capture dir and their intact exchange lines (the traversal
    bait lies outside it and is not counted).
    """

    root: Path
    rollouts: Path
    failures: Path
    capture_dir: Path
    main_rows: int
    failure_rows: int
    capture_files: int
    exchanges: int
    total_bytes: int
    planted: tuple[PlantedInput, ...]

    def planted_of(self, kind: str) -> tuple[PlantedInput, ...]:
        """The planted oddities of one kind, in write order."""
        return tuple(p for p in self.planted if p.kind == kind)


@dataclass
class _Attempt:
    """One attempt before writing: its row (None: no row) and its capture file."""

    row: dict[str, Any] | None
    rollout_id: str | None
    lines: list[bytes] = field(default_factory=list)
    exchanges: int = 0
    marker: bool = False
    row_kinds: list[str] = field(default_factory=list)
    line_plants: list[tuple[str, bytes]] = field(default_factory=list)


class _Source:
    """Seeded ids, text and times; the only source of variation in a job."""

    def __init__(self, seed: int, history_bytes: int) -> None:
        self.rng = random.Random(seed)
        self.history_bytes = history_bytes
        self.corpus = " ".join(self.rng.choices(_WORDS, k=60_000))
        self.clock = 1771800000.0 + self.rng.randrange(86_400)

    def text(self, n: int) -> str:
        n = max(1, n)
        if n >= len(self.corpus):
            return (self.corpus * (n // len(self.corpus) + 1))[:n]
        start = self.rng.randrange(len(self.corpus) - n)
        return self.corpus[start : start + n]

    def hex(self, n: int) -> str:
        return f"{self.rng.getrandbits(4 * n):0{n}x}"

    def alnum(self, n: int) -> str:
        return "".join(self.rng.choices(_ALNUM, k=n))

    def sized(self, n: int) -> int:
        return int(n * self.rng.uniform(0.5, 1.5))


@dataclass
class _Task:
    """A task: one agent, its tools and prompts; each of its rollouts replays it."""

    index: int
    agent: tuple[str, str, str, str]
    tools: list[str]
    system: str
    user: str
    temperature: float
    expected_answer: str | None


def _new_task(src: _Source, index: int) -> _Task:
    agent = _AGENTS[index % len(_AGENTS)]
    tools = src.rng.sample(sorted(_TOOLS), src.rng.randint(2, 5))
    answer = src.text(80) if agent[3] in ("judge", "harness") else None
    system, user = src.text(150 + src.history_bytes // 10), src.text(src.sized(200 + src.history_bytes // 4))
    return _Task(index, agent, tools, system, user, src.rng.choice((0.7, 1.0)), answer)


def _tool_args(src: _Source, name: str) -> dict[str, Any]:
    word = src.rng.choice(("core", "io", "net", "schema", "batch"))
    path = f"src/{word}/{src.rng.choice(('table', 'offset', 'keys'))}.py"
    return {
        "bash": lambda: {"command": f'grep -rn "{word}" src | head -{src.rng.randint(5, 80)}'},
        "python": lambda: {"code": "import json\n" + src.text(src.history_bytes // 8)},
        "read_file": lambda: {"path": path, "start_line": 1, "end_line": src.rng.randint(20, 400)},
        "write_file": lambda: {"path": path, "content": src.text(src.history_bytes // 4)},
        "search": lambda: {"query": word, "path": "."},
        "web_fetch": lambda: {"url": f"https://docs.mirror.internal/{word}/index.html"},
    }[name]()


def _tool_def(dialect: str, name: str) -> dict[str, Any]:
    description, props, required = _TOOLS[name]
    schema = {"type": "object", "properties": props, "required": required, "additionalProperties": False}
    if dialect == "chat":
        return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}
    if dialect == "messages":
        return {"name": name, "description": description, "input_schema": schema}
    return {"type": "function", "name": name, "description": description, "parameters": schema, "strict": False}


def _plan_turn(src: _Source, task: _Task, final: bool) -> dict[str, Any]:
    """One agent step: optional reasoning, then tool calls or the final answer (rendered per dialect)."""
    reasoning = src.text(src.sized(100 + src.history_bytes // 8)) if src.rng.random() < 0.6 else None
    prefix, size = ("toolu_01", 22) if task.agent[1] == "messages" else ("call_", 24)
    calls = (
        []
        if final
        else [
            {
                "call_id": prefix + src.alnum(size),
                "item_id": "fc_" + src.hex(32),
                "name": name,
                "args": _tool_args(src, name),
                "output": src.text(src.sized(src.history_bytes)),
            }
            for name in src.rng.sample(task.tools, 2 if src.rng.random() < 0.2 else 1)
        ]
    )
    return {
        "reasoning": reasoning,
        "reasoning_id": "rs_" + src.hex(32),
        "calls": calls,
        "text": src.text(src.sized(100 + src.history_bytes // 5)) if final else None,
        "message_id": "msg_" + src.hex(24),
        "signature": src.alnum(64),
    }


def _responses_items(turn: dict[str, Any], with_outputs: bool = True) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn["reasoning"]:
        items.append({"id": turn["reasoning_id"], "summary": [{"text": turn["reasoning"], "type": "summary_text"}], "type": "reasoning"})
    items.extend(
        {
            "arguments": orjson.dumps(c["args"]).decode(),
            "call_id": c["call_id"],
            "name": c["name"],
            "type": "function_call",
            "id": c["item_id"],
            "status": "completed",
        }
        for c in turn["calls"]
    )
    if turn["text"] is not None:
        items.append(
            {
                "type": "message",
                "role": "assistant",
                "id": turn["message_id"],
                "status": "completed",
                "content": [{"type": "output_text", "text": turn["text"], "annotations": []}],
            }
        )
    if with_outputs:
        items += [{"call_id": c["call_id"], "output": c["output"], "type": "function_call_output"} for c in turn["calls"]]
    return items


def _chat_message(turn: dict[str, Any]) -> dict[str, Any]:
    calls = [
        {"id": c["call_id"], "type": "function", "function": {"name": c["name"], "arguments": orjson.dumps(c["args"]).decode()}}
        for c in turn["calls"]
    ]
    return {"role": "assistant", "content": turn["text"], "tool_calls": calls, "reasoning_content": turn["reasoning"]}


def _anthropic_blocks(turn: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if turn["reasoning"]:
        blocks.append({"type": "thinking", "thinking": turn["reasoning"], "signature": turn["signature"]})
    blocks += [{"type": "tool_use", "id": c["call_id"], "name": c["name"], "input": c["args"]} for c in turn["calls"]]
    if turn["text"] is not None:
        blocks.append({"type": "text", "text": turn["text"]})
    return blocks


def _history_start(task: _Task, dialect: str) -> list[dict[str, Any]]:
    if dialect == "messages":
        return [{"role": "user", "content": [{"type": "text", "text": task.user}]}]
    return [{"role": "system", "content": task.system}, {"role": "user", "content": task.user}]


def _extend_history(history: list[dict[str, Any]], dialect: str, turn: dict[str, Any]) -> None:
    if dialect == "responses":
        history += _responses_items(turn)
    elif dialect == "chat":
        history.append({k: v for k, v in _chat_message(turn).items() if k != "reasoning_content"})
        history += [{"role": "tool", "tool_call_id": c["call_id"], "content": c["output"]} for c in turn["calls"]]
    else:
        history.append({"role": "assistant", "content": _anthropic_blocks(turn)})
        history.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": c["call_id"], "content": c["output"]} for c in turn["calls"]],
            }
        )


def _request(task: _Task, dialect: str, history: list[dict[str, Any]]) -> dict[str, Any]:
    model, tools = _MODELS[task.agent[2]], [_tool_def(dialect, t) for t in task.tools]
    if dialect == "responses":
        return {
            "model": model,
            "input": history[:],
            "tools": tools,
            "tool_choice": "auto",
            "parallel_tool_calls": True,
            "temperature": task.temperature,
            "max_output_tokens": 32768,
        }
    if dialect == "chat":
        return {
            "model": model,
            "messages": history[:],
            "tools": tools,
            "tool_choice": "auto",
            "temperature": task.temperature,
            "max_tokens": 32768,
        }
    return {
        "model": model,
        "max_tokens": 16384,
        "system": [{"type": "text", "text": task.system, "cache_control": {"type": "ephemeral"}}],
        "messages": history[:],
        "tools": tools,
    }


def _response(src: _Source, task: _Task, dialect: str, turn: dict[str, Any], tokens_in: int, cached: int, created: int) -> dict[str, Any]:
    """The upstream reply in the dialect's shape, with token usage."""
    model, reasoning = _MODELS[task.agent[2]], len(turn["reasoning"] or "") // 4
    tokens_out = reasoning + 20 + sum(len(str(c["args"])) for c in turn["calls"]) // 4 + len(turn["text"] or "") // 4
    if dialect == "responses":
        return {
            "id": "resp_" + src.hex(32),
            "created_at": created,
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "metadata": None,
            "model": model,
            "object": "response",
            "output": _responses_items(turn, with_outputs=False),
            "parallel_tool_calls": True,
            "temperature": task.temperature,
            "tool_choice": "auto",
            "top_p": 1.0,
            "max_output_tokens": 32768,
            "status": "completed",
            "usage": {
                "input_tokens": tokens_in,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": tokens_out,
                "output_tokens_details": {"reasoning_tokens": reasoning},
                "total_tokens": tokens_in + tokens_out,
            },
        }
    if dialect == "chat":
        return {
            "id": "chatcmpl-" + src.hex(32),
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": _chat_message(turn),
                    "logprobs": None,
                    "finish_reason": "tool_calls" if turn["calls"] else "stop",
                    "stop_reason": None,
                }
            ],
            "usage": {
                "prompt_tokens": tokens_in,
                "total_tokens": tokens_in + tokens_out,
                "completion_tokens": tokens_out,
                "prompt_tokens_details": {"cached_tokens": cached},
                "completion_tokens_details": {"reasoning_tokens": reasoning},
            },
            "prompt_logprobs": None,
        }
    created_tokens = src.rng.randint(0, max(0, tokens_in - cached))
    return {
        "id": "msg_01" + src.alnum(22),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _anthropic_blocks(turn),
        "stop_reason": "tool_use" if turn["calls"] else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": max(0, tokens_in - cached - created_tokens),
            "cache_creation_input_tokens": created_tokens,
            "cache_read_input_tokens": cached,
            "output_tokens": tokens_out,
            "service_tier": "standard",
        },
    }


_ERRORS = (
    (
        500,
        "upstream_error",
        {"message": "The server had an error while processing your request.", "type": "server_error", "code": None, "param": None},
    ),
    (
        429,
        "rate_limit",
        {
            "message": "Rate limit reached for requests. Please retry after 1s.",
            "type": "rate_limit_error",
            "code": "rate_limit_exceeded",
            "param": None,
        },
    ),
    (None, "timeout", None),
)


def _exchange(
    src: _Source,
    dialect: str,
    server: str,
    start: float,
    request: dict[str, Any],
    response: dict[str, Any] | None,
    session: str | None,
    error: tuple[Any, ...] | None,
) -> dict[str, Any]:
    """A capture line as the model-server middleware writes it (writer key order)."""
    latency = round(src.rng.uniform(300, 6000), 2)
    status, category, body = error or (200, None, None)
    line = {
        "model_call_id": src.hex(32),
        "dialect": dialect,
        "model_ref": {"type": "responses_api_models", "name": server},
        "started_at": round(start, 6),
        "completed_at": round(start + latency / 1000, 6),
        "latency_ms": latency,
        "latency_ttft_ms": round(latency * src.rng.uniform(0.05, 0.9), 2),
        "status_code": status,
        "error_category": category,
        "request": request,
        "response": {"error": body} if error and body else response,
    }
    if session:
        line["client_session_id"] = session
    line.update(
        upstream_attempted=True, response_source="upstream", upstream_status_code=status if error else None, local_response_reason=None
    )
    if not error and src.rng.random() < 0.1:
        line["response_raw"] = "event: stream\ndata: " + orjson.dumps(response).decode() + "\n\n"
    return line


def _dump_item(item: dict[str, Any]) -> dict[str, Any]:
    """A Responses item as 0.7.0 dumps it in a trajectory (JSON mode, defaults included)."""
    kind = item.get("type", "message")
    if kind == "reasoning":
        return {**item, "encrypted_content": None, "content": None}
    if kind == "function_call":
        return {**item, "namespace": None}
    if kind == "function_call_output":
        return {**item, "id": None, "status": None}
    if item["role"] == "assistant":
        parts = [{**p, "logprobs": None} for p in item["content"]]
        return {"id": item["id"], "content": parts, "role": "assistant", "status": "completed", "type": "message", "phase": None}
    return {"content": item["content"], "role": item["role"], "type": "message", "phase": None}


@dataclass
class _Episode:
    """One simulated rollout: capture exchanges plus what the agent reports about it."""

    exchanges: list[dict[str, Any]]
    conversation: list[dict[str, Any]]
    turns: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    session: str
    end: float


def _judge_exchange(src: _Source, task: _Task, now: float) -> dict[str, Any]:
    """The grader call an environment makes after the agent finished (no agent owns it)."""
    request = {
        "model": _MODELS[_JUDGE],
        "input": [
            {"role": "system", "content": "You are a strict grader. Answer [[YES]] or [[NO]]."},
            {"role": "user", "content": f"Reference: {task.expected_answer}\nCandidate: {src.text(200)}"},
        ],
        "temperature": 0.0,
        "max_output_tokens": 16,
    }
    verdict = {
        "id": "resp_" + src.hex(32),
        "created_at": int(now),
        "model": _MODELS[_JUDGE],
        "object": "response",
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "output": [
            {
                "id": "msg_" + src.hex(24),
                "content": [{"annotations": [], "text": "[[YES]]", "type": "output_text"}],
                "role": "assistant",
                "status": "completed",
                "type": "message",
            }
        ],
        "usage": {
            "input_tokens": 103,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 2,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 105,
        },
    }
    return _exchange(src, "responses", _JUDGE, now + 0.5, request, verdict, None, None)


def _turn_record(dialect: str, history: list[dict[str, Any]], turn: dict[str, Any], line: dict[str, Any], steps: int) -> dict[str, Any]:
    """What a producer trajectory says about one successful call (`steps` counts its own tools)."""
    question = [_dump_item(x) for x in history] if dialect == "responses" else history[:]
    answer = _responses_items(turn, False) if dialect == "responses" else _anthropic_blocks(turn)
    return {
        "response_id": line["response"]["id"],
        "server": line["model_ref"]["name"],
        "started_at": line["started_at"],
        "question": question,
        "steps": steps,
        "answer": [a for a in answer if a.get("type") not in ("reasoning", "thinking")],
        "reasoning": turn["reasoning"],
        "reasoning_items": [_dump_item(a) for a in answer if a.get("type") == "reasoning"],
    }


def _simulate(src: _Source, task: _Task, n_calls: int) -> _Episode:
    """Run the agent loop: every call sees the whole history so far; a failed call is retried."""
    _, dialect, server, evidence = task.agent
    session = "ses_" + src.hex(24)
    tag = session if evidence == "harness" else None
    history = _history_start(task, dialect)
    conversation = [{"type": "message", **m} for m in _history_start(task, "responses")]
    exchanges: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    now, tokens_in, steps = src.clock + src.rng.uniform(0, 3600), 120 + len(task.system + task.user) // 4, 0
    agent_calls = n_calls - 1 if evidence == "judge" and n_calls > 1 else n_calls
    for i in range(agent_calls):
        request = _request(task, dialect, history)
        if i < agent_calls - 1 and src.rng.random() < 0.04:
            exchanges.append(_exchange(src, dialect, server, now, request, None, tag, src.rng.choice(_ERRORS)))
            now = exchanges[-1]["completed_at"] + 1.0
            continue
        turn = _plan_turn(src, task, final=i == agent_calls - 1)
        cached = (tokens_in * 9 // 10) // 32 * 32 if turns else 0
        response = _response(src, task, dialect, turn, tokens_in, cached, int(now))
        exchanges.append(_exchange(src, dialect, server, now, request, response, tag, None))
        steps += len(turn["calls"])
        turns.append(_turn_record(dialect, history, turn, exchanges[-1], steps))
        now = exchanges[-1]["completed_at"]
        for c in turn["calls"]:
            took = src.rng.uniform(0.005, 4.0)
            tools.append(
                {
                    "call_id": c["call_id"],
                    "name": c["name"],
                    "started_at": round(now, 6),
                    "completed_at": round(now + took, 6),
                    "duration_ms": round(took * 1000, 3),
                    "output": c["output"],
                }
            )
            now += took
        _extend_history(history, dialect, turn)
        conversation += _responses_items(turn)
        tokens_in += sum(len(c["output"]) + len(str(c["args"])) for c in turn["calls"]) // 4
    if evidence == "judge" and n_calls > 1:
        exchanges.append(_judge_exchange(src, task, now))
        now = exchanges[-1]["completed_at"]
    return _Episode(exchanges, conversation, turns, tools, session, now)


def _ref(server: str, response_id: str) -> dict[str, Any]:
    return {"model_call_id": None, "model_ref": {"type": "responses_api_models", "name": server}, "response_id": response_id}


def _token_numbers(response: dict[str, Any]) -> tuple[int, int, int, int]:
    """(prompt, cached, completion, reasoning) of one upstream reply, whatever its dialect."""
    u = response["usage"]
    if "prompt_tokens" in u:
        return (
            u["prompt_tokens"],
            u["prompt_tokens_details"]["cached_tokens"],
            u["completion_tokens"],
            u["completion_tokens_details"]["reasoning_tokens"],
        )
    if "cache_read_input_tokens" in u:
        return (
            u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"],
            u["cache_read_input_tokens"],
            u["output_tokens"],
            0,
        )
    return (
        u["input_tokens"],
        u["input_tokens_details"]["cached_tokens"],
        u["output_tokens"],
        u["output_tokens_details"]["reasoning_tokens"],
    )


def _usage(responses: list[dict[str, Any]]) -> dict[str, Any]:
    """The agent's usage in Responses shape: summed over its successful calls, as harnesses report it."""
    numbers = [sum(column) for column in zip(*(_token_numbers(r) for r in responses), strict=False)]
    return {
        "input_tokens": numbers[0],
        "input_tokens_details": {"cached_tokens": numbers[1]},
        "output_tokens": numbers[2],
        "output_tokens_details": {"reasoning_tokens": numbers[3]},
        "total_tokens": numbers[0] + numbers[2],
    }


def _tool_record(invocation: str, tool: dict[str, Any], sandbox: str | None, timing: str) -> dict[str, Any]:
    return {
        "kind": "tool_call",
        "invocation_id": invocation,
        "tool_call_id": tool["call_id"],
        "sandbox_id": sandbox,
        "tool_name": tool["name"],
        "started_at": tool["started_at"],
        "completed_at": tool["completed_at"],
        "duration_ms": tool["duration_ms"],
        "timing_source": timing,
        "status": "completed",
        "error_type": None,
    }


def _invocation(invocation: str, duration_ms: float, refs: list[dict[str, Any]], conversation: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": "agent_invocation",
        "invocation_id": invocation,
        "parent_invocation_id": None,
        "spawned_by_tool_call_id": None,
        "status": "completed",
        "duration_ms": duration_ms,
        "error_type": None,
        "model_calls": refs,
        "conversation": conversation,
    }


def _observations(src: _Source, evidence: str, ep: _Episode, duration_ms: float) -> dict[str, Any]:
    """The agent's observation bundle (raw, as the agent server returns it)."""
    refs = [_ref(t["server"], t["response_id"]) for t in ep.turns]
    if evidence == "hermes":
        return {"source": "hermes", "records": [_invocation("root", duration_ms, refs, ep.conversation)]}
    if evidence == "claude_code":
        uid = src.hex(32)
        uid = f"{uid[:8]}-{uid[8:12]}-{uid[12:16]}-{uid[16:20]}-{uid[20:]}"
        return {
            "source": "claude_code",
            "records": [_invocation(uid, duration_ms, refs, ep.conversation)] + [_tool_record(uid, t, None, "artifact") for t in ep.tools],
            "gaps": [],
        }
    sandbox = "sbx-" + src.hex(12)
    return {
        "source": "harness",
        "records": [_invocation(ep.session, duration_ms, [], ep.conversation)]
        + [_tool_record(ep.session, t, sandbox, "executor") for t in ep.tools]
        + [
            {
                "kind": "sandbox",
                "role": "agent",
                "provider": "docker",
                "sandbox_id": sandbox,
                "outcome": "completed",
                "exit_code": 0,
                "wall_time_s": round(duration_ms / 1000 + 1, 3),
                "cpu_time_s": round(duration_ms / 2500, 3),
                "peak_memory_mib": round(src.rng.uniform(300, 4000), 1),
                "resource_usage_source": "cgroup_v2",
                "error_type": None,
            }
        ],
        "gaps": [],
    }


def _producer_trajectory(ep: _Episode, dialect: str, ids: tuple[str, str], duration_ms: float, turns_only: bool) -> dict[str, Any]:
    """The trajectory record an agent computes itself (0.7.0 JSON-mode shape).

    A harness reports only its turns (under its session invocation) and leaves invocations
    and tool calls to its observation bundle.
    """
    task_id, rollout_id = ids
    invocation = ep.session if turns_only else "root"
    refs = [_ref(t["server"], t["response_id"]) for t in ep.turns]
    turns = [
        {
            "invocation_id": invocation,
            "task_id": task_id,
            "rollout_id": rollout_id,
            "turn_no": i + 1,
            "timestamp": t["started_at"],
            "question": t["question"],
            "answer": t["answer"],
            "reasoning_content": (t["reasoning_items"] or None) if dialect == "responses" else t["reasoning"],
            "resolved": None,
            "step_count": t["steps"],
            "model_calls": [refs[i]],
        }
        for i, t in enumerate(ep.turns)
    ]
    invocations = [] if turns_only else [_invocation(invocation, duration_ms, refs, [_dump_item(x) for x in ep.conversation])]
    tools = [] if turns_only else [{**_tool_record(invocation, t, None, "executor"), "output": t["output"]} for t in ep.tools]
    return {
        "schema_version": "1.0",
        "task_id": task_id,
        "rollout_id": rollout_id,
        "invocations": invocations,
        "turns": turns,
        "model_calls": [],
        "tool_calls": tools,
        "gaps": [],
    }


def _row(src: _Source, task: _Task, ep: _Episode, ids: tuple[int, int, int], failure: dict[str, Any] | None = None) -> dict[str, Any]:
    """A persisted rollout row as 0.7.0 writes it after an inline collection."""
    name, dialect, _, evidence = task.agent
    t, r, attempt = ids
    answered = [x["response"] for x in ep.exchanges if x["status_code"] == 200 and x["model_ref"]["name"] != _JUDGE]
    duration_ms = round((ep.end - ep.exchanges[0]["started_at"]) * 1000, 3)
    row: dict[str, Any] = {
        "responses_create_params": {
            "input": _history_start(task, "responses"),
            "tools": [_tool_def("responses", x) for x in task.tools],
            "temperature": task.temperature,
            "max_output_tokens": 32768,
            "parallel_tool_calls": True,
        }
    }
    if task.expected_answer is not None:
        row["expected_answer"] = task.expected_answer
    row["response"] = {
        "id": "resp_" + src.hex(32),
        "created_at": round(ep.end, 6),
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": None,
        "model": _MODELS[task.agent[2]],
        "object": "response",
        "output": ep.conversation[2:],
        "parallel_tool_calls": True,
        "temperature": task.temperature,
        "tool_choice": "auto",
        "tools": row["responses_create_params"]["tools"],
        "top_p": 1.0,
        "background": None,
        "max_output_tokens": 32768,
        "max_tool_calls": None,
        "previous_response_id": None,
        "prompt": None,
        "reasoning": None,
        "service_tier": None,
        "status": "completed",
        "text": None,
        "top_logprobs": None,
        "truncation": None,
        "usage": _usage(answered) if answered else None,
        "user": None,
    }
    resolved = failure is None and src.rng.random() < 0.5
    row.update(reward=1.0 if resolved else 0.0, resolved=resolved)
    if src.rng.random() < 0.85:
        row["ng_perf"] = {"total_latency_ms": round(duration_ms + src.rng.uniform(20, 400), 3)}
    if evidence in ("hermes", "harness", "claude_code"):
        row["ng_agent_observations"] = _observations(src, evidence, ep, duration_ms)
    if evidence == "producer" or (evidence == "harness" and src.rng.random() < 0.6):
        rollout_id = f"{t}-{r}" + (f"-a{attempt}" if attempt else "")
        row["ng_trajectory"] = _producer_trajectory(ep, dialect, (str(t), rollout_id), duration_ms, turns_only=evidence == "harness")
    row.update(failure or {})
    row.update(_ng_task_index=t, _ng_rollout_index=r, agent_ref={"type": "responses_api_agents", "name": name})
    if attempt:
        row["_ng_attempt_index"] = attempt
    if evidence == "judge":
        row["_ng_environment_server"] = "math_with_judge"
    return row


def _request_failure(src: _Source, cls: str, task: _Task, t: int, r: int) -> dict[str, Any]:
    """The small sidecar row of an attempt whose `/run` call itself failed."""
    status, body = (
        (503, None)
        if cls == "agent_request_failed"
        else (
            500,
            (
                'Traceback (most recent call last):\n  File "/opt/gym/agent/app.py", line 412, in run\n'
                "RuntimeError: Received an invalid response from model server"
            ),
        )
    )
    url = f"http://10.0.{src.rng.randrange(256)}.{src.rng.randrange(256)}:{src.rng.randrange(20000, 60000)}/run"
    reason = "Service Unavailable" if status == 503 else "Internal Server Error"
    return {
        "_ng_failure_class": cls,
        "_ng_failure_type": "ClientResponseError",
        "_ng_failure_message": f"{status}, message='{reason}', url='{url}'",
        "_ng_failure_http_status": status,
        "_ng_failure_response_body": body,
        "_ng_task_index": t,
        "_ng_rollout_index": r,
        "agent_ref": {"type": "responses_api_agents", "name": task.agent[0]},
    }


_FAILURES = {
    "agent_request_failed": None,
    "agent_run_error": None,
    "timeout_exceeded": {
        "_ng_failure_class": "timeout_exceeded",
        "_ng_failure_terminal": False,
        "error": "rollout exceeded the per-task timeout of 3600s",
    },
    "judge_failed": {
        "_ng_failure_class": "judge_failed",
        "_ng_failure_judge_error": "judge response did not contain a verdict: 'I cannot determine'",
    },
}


def _capture_lines(ep: _Episode) -> list[bytes]:
    return [orjson.dumps(x) + b"\n" for x in ep.exchanges]


def _attempt(src: _Source, task: _Task, ids: tuple[int, int, int], n_calls: int, failure: str | None = None) -> _Attempt:
    t, r, attempt = ids
    rollout_id = f"{t}-{r}" + (f"-a{attempt}" if attempt else "")
    ep = _simulate(src, task, n_calls if failure is None else max(1, n_calls // 2))
    if failure is not None and _FAILURES[failure] is None:
        row = _request_failure(src, failure, task, t, r)
    else:
        row = _row(src, task, ep, ids, _FAILURES[failure] if failure else None)
    kinds = ["failed_attempt"] if failure else []
    return _Attempt(row, rollout_id, _capture_lines(ep), len(ep.exchanges), row_kinds=kinds)


def _damage_line(a: _Attempt, kind: str, index: int, line: bytes) -> None:
    """Replace one capture line by a damaged one (the exchange is lost)."""
    a.lines[index] = line
    a.exchanges -= 1
    a.line_plants.append((kind, line))


def _insert_line(a: _Attempt, kind: str, line: bytes, src: _Source) -> None:
    a.lines.insert(src.rng.randint(0, len(a.lines)), line)
    a.line_plants.append((kind, line))


def _plan_realistic(
    src: _Source, rollouts: int, calls: int, failures_fraction: float, repeats: int = REPEATS, first_task: int = 0
) -> tuple[list[Any], list[Any], list[_Attempt], list[_Task]]:
    """Tasks x repeats, some failed first attempts retried, one marker, one damaged line, one orphan.

    Task indices (and so rollout ids) start at `first_task`; the orphan takes the index after the last task.
    """
    n_tasks = math.ceil(rollouts / repeats)
    tasks = [_new_task(src, first_task + t) for t in range(n_tasks + 1)]
    pairs = [(t, r) for t in range(n_tasks) for r in range(repeats)][:rollouts]
    n_failing = max(1, round(rollouts * failures_fraction)) if rollouts > 1 else 0
    failing = set(src.rng.sample(range(rollouts), n_failing))
    main: list[Any] = []
    side: list[Any] = []
    for k, (t, r) in enumerate(pairs):
        n_calls = max(1, calls + src.rng.randint(-2, 2)) if calls > 3 else calls
        if k in failing:
            side.append(_attempt(src, tasks[t], (first_task + t, r, 0), n_calls, src.rng.choice(sorted(_FAILURES))))
        main.append(_attempt(src, tasks[t], (first_task + t, r, 1 if k in failing else 0), n_calls))
    src.rng.shuffle(main)
    src.rng.shuffle(side)
    orphan = _attempt(src, tasks[n_tasks], (first_task + n_tasks, 0, 0), calls)
    orphan.row, orphan.row_kinds = None, ["orphan_capture"]
    several = [a for a in main if len(a.lines) > 1]  # a cut last line leaves records before it
    marked, damaged = src.rng.sample(several if len(several) >= 2 else [a for a in main if a.lines], 2)
    marked.marker = True
    _damage_line(damaged, "truncated_capture_line", len(damaged.lines) - 1, damaged.lines[-1][: len(damaged.lines[-1]) // 2])
    return main, side, [orphan], tasks


def _identity_rows(src: _Source, task: _Task, first_index: int, calls: int) -> list[_Attempt]:
    """Extra rows whose identity 0.7.0 cannot use (no capture file can belong to them)."""
    edits = (
        ("missing_identity", "_ng_task_index", None),
        ("invalid_identity", "_ng_rollout_id", 5),
        ("invalid_identity", "_ng_attempt_index", "x"),
        ("invalid_identity", "_ng_task_index", "a b"),
        ("path_traversal_id", "_ng_rollout_id", "../x"),
        ("path_traversal_id", "_ng_rollout_id", "/abs"),
        ("path_traversal_id", "_ng_rollout_id", "a/b"),
    )
    rows = []
    for k, (kind, key, value) in enumerate(edits):
        row = _attempt(src, task, (first_index + k, 0, 0), calls).row
        if value is None:
            del row[key]
        else:
            row[key] = value
        rows.append(_Attempt(row, value if kind == "path_traversal_id" else None, row_kinds=[kind]))
    return rows


def _damage_captures(src: _Source, victims: list[_Attempt]) -> None:
    """Lines a reader must count as unusable, a blank and a huge line, and one missing file."""
    _insert_line(victims[0], "non_object_capture_line", b"[]\n", src)
    _insert_line(victims[0], "non_object_capture_line", b"null\n", src)
    _damage_line(victims[1], "invalid_utf8_capture_line", 0, victims[1].lines[0].replace(b'"upstream"', b'"up\xff\xfestream"', 1))
    _insert_line(victims[1], "blank_capture_line", b" \t \n", src)
    _damage_line(victims[2], "bom_capture_line", 0, b"\xef\xbb\xbf" + victims[2].lines[0])
    head, _, tail = victims[3].lines[0].partition(b'"latency_ms":')
    _damage_line(victims[3], "nan_capture_line", 0, head + b'"latency_ms":NaN' + tail[tail.index(b",") :])
    huge = orjson.loads(victims[4].lines[0])
    huge["response_raw"] = src.text(HUGE_LINE_BYTES)
    victims[4].lines[0] = orjson.dumps(huge) + b"\n"
    victims[4].line_plants.append(("huge_capture_line", victims[4].lines[0]))
    victims[5].lines, victims[5].exchanges, victims[5].row_kinds = [], 0, ["missing_capture"]


def _damage_rows(main: list[Any], twin_of: _Attempt, stale: _Attempt) -> None:
    """A duplicate identity, a stale `no_records` attachment and two invalid bundles."""
    twin = copy.deepcopy(twin_of.row)
    twin["reward"] = 1.0 - twin["reward"]
    main.append(_Attempt(twin, twin_of.rollout_id, row_kinds=["duplicate_identity"]))
    stale.row["ng_model_call_capture"] = {
        "rollout_id": stale.rollout_id,
        "metrics": dict.fromkeys(("tokens_in", "tokens_out", "tokens_reasoning", "tokens_total", "cached_tokens", "latency_total_ms"))
        | {"num_calls": 0},
        "calls": [],
        "gaps": [{"code": "model_call_capture_no_records"}],
    }
    stale.row_kinds = ["stale_no_records"]
    bundles = [a for a in main if "ng_agent_observations" in (a.row or {}) and not a.row_kinds][:2]
    for a, drop_kind in zip(bundles, (False, True), strict=False):
        bundle = copy.deepcopy(a.row["ng_agent_observations"])
        if drop_kind:
            del bundle["records"][0]["kind"]
        else:
            bundle["unknown_field"] = True
        a.row["ng_agent_observations"], a.row_kinds = bundle, ["invalid_observations"]


def _stray_captures(src: _Source, task: _Task, calls: int) -> list[_Attempt]:
    """A stale attempt's capture nobody claims, and the file a `../x` id would reach."""
    stale = _attempt(src, task, (task.index, 0, 3), calls)
    bait = _attempt(src, task, (task.index, 1, 0), 1)
    stale.row, stale.row_kinds = None, ["orphan_capture"]
    bait.row, bait.rollout_id, bait.row_kinds = None, "../x", ["traversal_bait"]
    return [stale, bait]


def _add_bad_lines(src: _Source, main: list[Any], side: list[Any], row: bytes) -> None:
    """Lines of the rollouts files that cannot become rows; the sidecar ends mid-row."""
    raw = [
        ("blank_line", b"  \n"),
        ("blank_line", b"\n"),
        ("non_object_line", b"[]\n"),
        ("non_object_line", b"null\n"),
        ("non_object_line", b'"row"\n'),
        ("non_object_line", b"3\n"),
        ("malformed_json_line", row[: len(row) // 2] + b"\n"),
        ("invalid_utf8_line", row.replace(b'"responses_create_params"', b'"responses_\xc3(create"', 1)),
    ]
    for entry in raw:
        main.insert(src.rng.randint(0, len(main)), entry)
    side.append(("malformed_json_line", row[: len(row) // 3]))


def _plant_hostile(src: _Source, main: list[Any], side: list[Any], extra: list[_Attempt], tasks: list[_Task], calls: int) -> None:
    """Add the damage of a hostile job on top of a realistic plan (in place)."""
    victims = src.rng.sample([a for a in main if not a.marker and not a.line_plants and len(a.lines) > 1], 9)
    _damage_captures(src, victims[:6])
    _damage_rows(main, victims[6], victims[7])
    for row in _identity_rows(src, tasks[-1], len(tasks) + 1, max(1, calls // 2)):
        main.insert(src.rng.randint(0, len(main)), row)
    extra += _stray_captures(src, tasks[0], calls)
    _add_bad_lines(src, main, side, orjson.dumps(victims[8].row) + b"\n")


def _write(root: Path, main: list[Any], side: list[Any], extra: list[_Attempt]) -> JobInfo:
    """Write the job with large buffers; record where every planted oddity landed."""
    planted: list[PlantedInput] = []
    counts = {"bytes": 0, "files": 0, "exchanges": 0, "main": 0, "failures": 0}
    capture_dir = root / _CAPTURE_DIR
    capture_dir.mkdir(parents=True, exist_ok=True)
    for name, entries, key in (("rollouts.jsonl", main, "main"), ("rollouts_failures.jsonl", side, "failures")):
        with open(root / name, "wb", buffering=1 << 20) as f:
            for number, entry in enumerate(entries, start=1):
                if isinstance(entry, tuple):
                    planted.append(PlantedInput(entry[0], name, number))
                    data = entry[1]
                else:
                    planted += [PlantedInput(k, name, number, entry.rollout_id) for k in entry.row_kinds]
                    data = orjson.dumps(entry.row) + b"\n"
                    counts[key] += 1
                counts["bytes"] += f.write(data)
    for a in [e for e in main + side if isinstance(e, _Attempt)] + extra:
        if a.rollout_id is None or not (a.lines or a.marker):
            continue
        base = posixpath.normpath(f"{_CAPTURE_DIR}/{a.rollout_id}")
        if a.row is None:
            planted += [PlantedInput(k, f"{base}.capture.jsonl", None, a.rollout_id) for k in a.row_kinds]
        if a.lines:
            with open(root / f"{base}.capture.jsonl", "wb", buffering=1 << 20) as f:
                for line in a.lines:
                    counts["bytes"] += f.write(line)
            if base.startswith(f"{_CAPTURE_DIR}/"):
                counts["files"] += 1
                counts["exchanges"] += a.exchanges
            numbers = {id(line): i for i, line in enumerate(a.lines, start=1)}
            planted += [PlantedInput(kind, f"{base}.capture.jsonl", numbers[id(line)], a.rollout_id) for kind, line in a.line_plants]
        if a.marker:
            (root / f"{base}.capture.incomplete").write_bytes(b"")
            planted.append(PlantedInput("incomplete_marker", f"{base}.capture.incomplete", None, a.rollout_id))
    return JobInfo(
        root,
        root / "rollouts.jsonl",
        root / "rollouts_failures.jsonl",
        capture_dir,
        counts["main"],
        counts["failures"],
        counts["files"],
        counts["exchanges"],
        counts["bytes"],
        tuple(planted),
    )


def _reward(rng: random.Random, kind: str, resolved: bool) -> float | int | bool | None:
    """A reward of one kind for a row (None: the row has no reward)."""
    return {
        "float": lambda: round(rng.uniform(0.0, 1.0), rng.choice((1, 3, 17))),
        "int": lambda: int(resolved),
        "bool": lambda: resolved,
        "missing": lambda: None,
    }[kind]()


def _apply_score_options(
    main: list[Any], side: list[Any], seed: int, reward_kinds: tuple[str, ...], servers: int, mask_fraction: float
) -> None:
    """Rewrite rewards, server stamps and masks of the planned rows (in place, own generator)."""
    unknown = set(reward_kinds) - set(REWARD_KINDS)
    if unknown:
        raise ValueError(f"unknown reward kinds {sorted(unknown)}; known: {', '.join(REWARD_KINDS)}")
    rng = random.Random(f"scores-{seed}")
    rows = [a.row for a in main if isinstance(a, _Attempt) and a.row is not None]
    for row in rows:
        if reward_kinds:
            reward = _reward(rng, rng.choice(reward_kinds), bool(row.get("resolved")))
            if reward is None:
                row.pop("reward", None)
            else:
                row["reward"] = reward
        if mask_fraction and rng.random() < mask_fraction:
            row["mask_sample"] = True
    for row in rows + [a.row for a in side if isinstance(a, _Attempt) and a.row is not None]:
        if servers and isinstance(row.get("_ng_task_index"), int):
            row["_ng_environment_server"] = f"env_server_{row['_ng_task_index'] % servers}"


def generate_job(
    out_dir: Path,
    *,
    rollouts: int,
    calls_per_rollout: int = 8,
    history_bytes: int = 2000,
    mode: Literal["realistic", "hostile"] = "realistic",
    seed: int = 0,
    failures_fraction: float = 0.06,
    repeats: int = REPEATS,
    reward_kinds: tuple[str, ...] = (),
    servers: int = 0,
    mask_fraction: float = 0.0,
    first_task: int = 0,
) -> JobInfo:
    """Write a job under `out_dir` (same arguments -> same bytes) and say what it holds.

    Args:
        rollouts: main rollouts (tasks x 4 repeats); hostile mode needs at least 24 (and 2 calls per rollout).
        calls_per_rollout: mean capture lines per rollout (varies by +-2 above 3).
        history_bytes: typical tool output; each request grows by about that much per turn.
        mode: `realistic`, or `hostile` for the damage listed in the module docstring.
        seed: the only source of variation.
        failures_fraction: share of rollouts whose first attempt failed and was retried.
        repeats, reward_kinds, servers, mask_fraction: the score options (module docstring).
        first_task: the first task index (`generate_shards` gives each shard its own range).

    Raises:
        FileExistsError: `out_dir` already holds a job (nothing is overwritten).
    """
    if rollouts < 1 or calls_per_rollout < 1 or history_bytes < 1 or repeats < 1 or servers < 0:
        raise ValueError("rollouts, calls_per_rollout, history_bytes and repeats must be positive, servers not negative")
    if mode == "hostile" and (rollouts < 24 or calls_per_rollout < 2):
        raise ValueError("hostile mode needs at least 24 rollouts and 2 calls per rollout to plant every kind of damage")
    out_dir = Path(out_dir)
    existing = [n for n in _GENERATED if (out_dir / n).exists()]
    if existing:
        raise FileExistsError(f"{out_dir} already holds a job: {', '.join(existing)}")
    src = _Source(seed, history_bytes)
    main, side, extra, tasks = _plan_realistic(src, rollouts, calls_per_rollout, failures_fraction, repeats, first_task)
    if mode == "hostile":
        _plant_hostile(src, main, side, extra, tasks, calls_per_rollout)
    if reward_kinds or servers or mask_fraction:
        _apply_score_options(main, side, seed, tuple(reward_kinds), servers, mask_fraction)
    return _write(out_dir, main, side, extra)


@dataclass(frozen=True)
class ShardedJob:
    """A job split the way chunked `gym eval run` invocations leave it, and what was taken out.

    `lost`/`failed` map a shard's file name to the (task, rollout) keys removed from its
    rollouts file and sidecar (walltime kills) or from its rollouts file alone (failed attempts
    never retried); `duplicated` is the key whose row appears twice in the second shard.
    """

    root: Path
    shards: tuple[Path, ...]
    capture_dir: Path
    lost: dict[str, tuple[tuple[int, int], ...]]
    failed: dict[str, tuple[tuple[int, int], ...]]
    duplicated: tuple[int, int]


def shard_job(info: JobInfo, *, shards: int = 3, lost_per_shard: int = 2, failed_per_shard: int = 1) -> ShardedJob:
    """Split a realistic job in place into `rollouts-rs<k>-chunk0.jsonl` shards with both sidecars.

    Shard k holds the rollouts whose `_ng_rollout_index % shards == k` (so every task's repeats
    span shards), its failure rows, and `<stem>_materialized_inputs.jsonl` with one row per
    (task, rollout) it owed. Then each shard loses `lost_per_shard` rollouts from both files and
    `failed_per_shard` retried rollouts from its rollouts file only; the second shard's first
    row is written twice. The one-file `rollouts.jsonl` and sidecar are removed.
    """

    def rows(path: Path) -> list[dict[str, Any]]:
        return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]

    def key(row: dict[str, Any]) -> tuple[int, int]:
        return row["_ng_task_index"], row["_ng_rollout_index"]

    main_rows, side_rows = rows(info.rollouts), rows(info.failures)
    rng = random.Random(shards * 1000 + lost_per_shard)
    paths, lost, failed = [], {}, {}
    duplicated: tuple[int, int] = (-1, -1)
    for k in range(shards):
        main = [r for r in main_rows if r["_ng_rollout_index"] % shards == k]
        side = [r for r in side_rows if r["_ng_rollout_index"] % shards == k]
        owed = sorted({key(r): r for r in side + main}.items())
        stem = f"rollouts-rs{k}-chunk0"
        inventory = [
            {
                "_ng_task_index": t,
                "_ng_rollout_index": r,
                "agent_ref": row["agent_ref"],
                "responses_create_params": row.get("responses_create_params", {}),
            }
            for (t, r), row in owed
        ]
        retried = sorted({key(r) for r in side} & {key(r) for r in main})
        failed[f"{stem}.jsonl"] = tuple(rng.sample(retried, min(failed_per_shard, len(retried))))
        landed_only = sorted({key(r) for r in main} - {key(r) for r in side})
        lost[f"{stem}.jsonl"] = tuple(rng.sample(landed_only, lost_per_shard))
        gone = set(lost[f"{stem}.jsonl"])
        main = [r for r in main if key(r) not in gone | set(failed[f"{stem}.jsonl"])]
        side = [r for r in side if key(r) not in gone]
        if k == 1:
            main.insert(1, main[0])
            duplicated = key(main[0])
        for suffix, entries in (("", main), ("_failures", side), ("_materialized_inputs", inventory)):
            (info.root / f"{stem}{suffix}.jsonl").write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in entries))
        paths.append(info.root / f"{stem}.jsonl")
    info.rollouts.unlink()
    info.failures.unlink()
    return ShardedJob(info.root, tuple(paths), info.capture_dir, lost, failed, duplicated)


def generate_shards(out_dir: Path, *, rollouts: int, shard_rollouts: int, seed: int = 0, **shape: Any) -> list[Path]:
    """A job too large to plan in memory at once, as shards of at most `shard_rollouts` rollouts.

    `generate_job` holds a whole job in memory (about 1 GB per 1,000 rollouts of the default
    shape), so shard k is a job of its own (seed `seed + k`, task indices after the previous
    shard's, so rollout ids stay unique) written as `shard-<k>.jsonl` with its sidecar
    `shard-<k>_failures.jsonl`, its captures in the one `model-calls/`; the shard paths, in order.
    """
    out_dir = Path(out_dir)
    capture_dir = out_dir / _CAPTURE_DIR
    capture_dir.mkdir(parents=True, exist_ok=False)
    tasks_per_shard = math.ceil(shard_rollouts / shape.get("repeats", REPEATS)) + 1  # + the orphan's
    paths = []
    for k, first in enumerate(range(0, rollouts, shard_rollouts)):
        part = out_dir / f".shard-{k:02d}"
        info = generate_job(part, rollouts=min(shard_rollouts, rollouts - first), seed=seed + k, first_task=k * tasks_per_shard, **shape)
        info.rollouts.rename(out_dir / f"shard-{k:02d}.jsonl")
        info.failures.rename(out_dir / f"shard-{k:02d}_failures.jsonl")
        for capture in info.capture_dir.iterdir():
            capture.rename(capture_dir / capture.name)
        shutil.rmtree(part)
        paths.append(out_dir / f"shard-{k:02d}.jsonl")
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate a deterministic NeMo Gym 0.7.0 evaluation job.")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--rollouts", type=int, required=True)
    parser.add_argument("--calls-per-rollout", type=int, default=8)
    parser.add_argument("--history-bytes", type=int, default=2000)
    parser.add_argument("--mode", choices=("realistic", "hostile"), default="realistic")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--failures-fraction", type=float, default=0.06)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--reward-kinds", default="", help=f"comma-separated subset of {','.join(REWARD_KINDS)}")
    parser.add_argument("--servers", type=int, default=0)
    parser.add_argument("--mask-fraction", type=float, default=0.0)
    args = parser.parse_args(argv)
    info = generate_job(
        args.out_dir,
        rollouts=args.rollouts,
        calls_per_rollout=args.calls_per_rollout,
        history_bytes=args.history_bytes,
        mode=args.mode,
        seed=args.seed,
        failures_fraction=args.failures_fraction,
        repeats=args.repeats,
        reward_kinds=tuple(k for k in args.reward_kinds.split(",") if k),
        servers=args.servers,
        mask_fraction=args.mask_fraction,
    )
    kinds: dict[str, int] = {}
    for p in info.planted:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    summary = {
        "root": str(info.root),
        "main_rows": info.main_rows,
        "failure_rows": info.failure_rows,
        "capture_files": info.capture_files,
        "exchanges": info.exchanges,
        "total_bytes": info.total_bytes,
        "planted": kinds,
    }
    sys.stdout.write(orjson.dumps(summary, option=orjson.OPT_INDENT_2).decode() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
