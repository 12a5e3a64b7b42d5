"""A run directory written by hand whose every text is hostile, for the rollout viewer's tests.

``hostile_run`` writes what a rebuild of the viewer from a run's outputs reads (``manifest.json``, ``rollouts.jsonl``,
``health/rollout_verdicts.jsonl``, ``atif/manifest.jsonl`` and ``atif/rejections.jsonl``) for
three main rows and a sidecar one. Markup, scripts, a closing
``</script>``, a ``javascript:`` URL, right-to-left overrides, U+2028, a 200,000-character
line and a lone surrogate stand wherever a row, a verdict, an ATIF file or the manifest puts
text. A page that ran any of it sets ``window.__pwned``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from tests.manifests import finished_run

SCRIPT = "<script>window.__pwned = 1</script>"
IMAGE = '<img src=x onerror="window.__pwned = 2">'
BREAKOUT = "</script><script>window.__pwned = 3</script><!--"
SVG = '"><svg onload="window.__pwned = 4">'
LINK = "javascript:window.__pwned = 5"
RTL = "\u202eevil\u202c \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627"
LONG = "A" * 200_000
SEPARATORS = "line\u2028separator\u2029paragraph\u0000nul"
HOSTILE = (SCRIPT, IMAGE, BREAKOUT, SVG, LINK, RTL, SEPARATORS)


def hostile_row(task: int, rollout: int) -> dict[str, Any]:
    """A main row with two turns, two model calls (one failed) and a tool call, hostile text everywhere."""
    calls = [
        {
            "model_call_id": "mc-1",
            "response_id": "resp-1",
            "tool_calls": [{"call_id": "tool-1", "name": SCRIPT, "arguments": {"cmd": BREAKOUT}}],
        },
        {"model_call_id": "mc-2", "response_id": None, "tool_calls": []},
    ]
    return {
        "_ng_task_index": task,
        "_ng_rollout_index": rollout,
        "agent_ref": {"type": "responses_api_agents", "name": f"agent {IMAGE}"},
        "_ng_environment_server": RTL,
        "reward": 0.5,
        "ng_model_call_capture": {"rollout_id": f"{task}-{rollout}", "calls": calls, "gaps": [{"code": f"made_up {SVG}", "detail": IMAGE}]},
        "ng_trajectory": {
            "task_id": SCRIPT,
            "rollout_id": f"{task}-{rollout}",
            "invocations": [{"invocation_id": RTL, "model_calls": [{"model_call_id": "mc-1"}, {"model_call_id": "mc-2"}]}],
            "turns": [
                {
                    "invocation_id": RTL,
                    "turn_no": 1,
                    "timestamp": 1.7e9,
                    "question": [{"type": "text", "text": SVG}],
                    "answer": BREAKOUT,
                    "reasoning_content": RTL,
                    "model_calls": [{"model_call_id": "mc-1"}],
                },
                {
                    "invocation_id": RTL,
                    "turn_no": 2,
                    "timestamp": 1.7e9 + 2,
                    "question": [],
                    "answer": None,
                    "reasoning_content": None,
                    "model_calls": [{"model_call_id": "mc-2"}],
                },
            ],
            "model_calls": [
                {
                    "model_call_id": "mc-1",
                    "duration_ms": 12.5,
                    "response_metadata": {
                        "response_id": "resp-1",
                        "model": f"model {SCRIPT}",
                        "model_ref": {"type": "responses_api_models", "name": LINK},
                        "status_code": 200,
                    },
                    "token_stats": {"prompt_tokens": 10, "completion_tokens": 5},
                },
                {
                    "model_call_id": "mc-2",
                    "duration_ms": 3.0,
                    "response_metadata": {"response_id": None, "model": "m", "status_code": 500, "error_category": IMAGE},
                    "response": {"error": {"message": SCRIPT + SEPARATORS}},
                },
            ],
            "tool_calls": [
                {
                    "tool_call_id": "tool-1",
                    "invocation_id": RTL,
                    "tool_name": SCRIPT,
                    "status": "failed",
                    "error_type": SVG,
                    "duration_ms": 4.0,
                    "output": SCRIPT + LONG,
                },
            ],
            "gaps": [{"code": "turns_unavailable", "detail": BREAKOUT}],
        },
        "ng_perf": {"num_turns": 2, "prompt_tokens": 10, "completion_tokens": 5, "total_latency_ms": 15.5},
    }


def hostile_run(run_dir: Path) -> Path:
    """Write the hostile run into ``run_dir``; ``run_dir``.

    Rows (``rollouts.jsonl`` lines 1-3): task 0 rollout 0 (exported to ATIF under a hostile
    file name, unhealthy with hostile findings), task 0 rollout 1 (refused with hostile text),
    and a line only Python's ``json`` reads (a lone surrogate: health calls it unreadable).
    """
    (run_dir / "health").mkdir(parents=True)
    (run_dir / "atif").mkdir()
    rows = [json.dumps(hostile_row(0, 0), ensure_ascii=False), json.dumps(hostile_row(0, 1), ensure_ascii=False)]
    lone = hostile_row(1, 0)
    lone["ng_trajectory"]["tool_calls"][0]["output"] = "lone \ud800 surrogate"
    rows.append(json.dumps(lone))  # ensure_ascii: the surrogate stays an escape, which orjson refuses
    (run_dir / "rollouts.jsonl").write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    (run_dir / "rollouts_failures.jsonl").write_text(json.dumps(hostile_row(9, 9), ensure_ascii=False) + "\n", encoding="utf-8")
    findings = [
        {"check": "agent_turn_hollow", "locator": {"turn": 2}, "detail": {"reason": SCRIPT}},
        {"check": "model_call_failed", "locator": {"call_id": "mc-2"}, "detail": {"status": 500, "note": IMAGE}},
        {"check": f"not_a_check {BREAKOUT}", "locator": {"call_id": SVG}, "detail": LONG},
        {"check": "rollout_missing_agent_turns", "detail": {"reason": RTL}},
    ]
    unreadable = "__unreadable_record__:input-0:line-3"
    verdicts = [
        {"_ng_task_index": 0, "_ng_rollout_index": 0, "verdict": "unhealthy", "findings": findings, "unobserved": [SCRIPT]},
        {"_ng_task_index": 0, "_ng_rollout_index": 1, "verdict": "healthy", "findings": [], "unobserved": []},
        {
            "_ng_task_index": unreadable,
            "_ng_rollout_index": 0,
            "verdict": "unhealthy",
            "findings": [{"check": "record_unreadable", "locator": {"line": 3}, "detail": {"reason": "no JSON object"}}],
            "unobserved": [],
        },
    ]
    _jsonl(run_dir / "health" / "rollout_verdicts.jsonl", verdicts)
    _jsonl(run_dir / "atif" / "manifest.jsonl", [{"_ng_task_index": 0, "_ng_rollout_index": 0, "trajectory_path": LINK + ".json"}])
    _jsonl(
        run_dir / "atif" / "rejections.jsonl",
        [
            {"line": 2, "rollout_id": "0-1", "error": IMAGE + SEPARATORS},
            {"line": 3, "rollout_id": "1-0", "error": "unreadable"},
        ],
    )
    attempts = [
        {"key": "main:1", "line": 1, "source": "main", "status": "ok", "rollout_id": "0-0", "notes": [SCRIPT]},
        {"key": "failures:1", "line": 1, "source": "failures", "status": "ok", "rollout_id": "9-9"},
        {"key": "main:2", "line": 2, "source": "main", "status": "rejected", "rollout_id": "0-1", "reason": BREAKOUT},
        {"key": "main:3", "line": 3, "source": "main", "status": "ok", "rollout_id": "1-0"},
    ]
    run = dataclasses.asdict(finished_run("hostile", "r1").run)
    manifest = {"run": run, "parameters": {}, "shards": [{"file": SVG}], "attempts": attempts}
    (run_dir / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return run_dir


def _jsonl(path: Path, lines: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
