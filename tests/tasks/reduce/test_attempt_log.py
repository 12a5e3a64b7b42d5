"""The manifest is written streaming, yet byte-identical to orjson's indentation of the whole document."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from evidence import AttemptOutcome, AttemptPart, Status
from evidence.models.run import Streamed, manifest_chunks
from tasks.discover.refs import AttemptRef
from tasks.reduce.attempt_log import AttemptLog


def _document(entries: list[dict[str, Any]], files: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The same document twice: with Streamed values, and materialised."""

    def shaped(attempts: Any, listed: Any) -> dict[str, Any]:
        return {
            "run": {"run_id": "r-é", "resumed": False, "nested": {"deep": [1, 2.5, None], "empty": {}}},
            "inputs": {"fingerprint": "f", "files": listed},
            "counts": {"attempts": len(entries), "by_status": {}},
            "attempts": attempts,
            "orphans": [],
            "timings": {"reduce_s": 0.5},
        }

    streamed = shaped(Streamed(lambda: iter(entries)), Streamed(lambda: iter(files.items()), pairs=True))
    return streamed, shaped(entries, files)


@pytest.mark.parametrize("size", [0, 1, 3])
def test_streamed_manifest_equals_orjson_indent(size: int) -> None:
    entries = [{"key": f"main:{i}", "notes": ["a", "ü"] if i % 2 else [], "seconds": 0.25 * i} for i in range(size)]
    files = {f"model-calls/{i}.capture.jsonl": {"size": i, "version": "v"} for i in range(size)}
    streamed, whole = _document(entries, files)
    expected = orjson.dumps(whole, option=orjson.OPT_INDENT_2) + b"\n"
    assert b"".join(manifest_chunks(streamed)) == expected
    assert b"".join(manifest_chunks(streamed)) == expected  # a retried write starts over


def _part(status: Status, rollout_id: str | None, seconds: float, fingerprint: str, **extra: Any) -> AttemptPart:
    outcome = AttemptOutcome(
        status, extra.get("reason"), tuple(extra.get("notes", ())), extra.get("repaired", False), rollout_id, b"{}", None
    )
    return AttemptPart(fingerprint, seconds, outcome)


def _ref(line: int) -> AttemptRef:
    return AttemptRef("main", line, 0, 2, line, None, None, False, str(line))


def test_attempt_log_counts_and_notes_shared_rollout_ids() -> None:
    parts = [
        _part(Status.OK, "a", 0.1, "1"),
        _part(Status.REJECTED, "b", 0.2, "2", reason="ValueError: x"),
        _part(Status.OK, "a", 0.3, "3", repaired=True, notes=["gap"]),
        _part(Status.FAILED, None, 0.4, "4", reason="RecursionError: deep (in health checks)"),
    ]
    with AttemptLog() as log:
        for line, part in enumerate(parts, start=1):
            log.add(_ref(line), part)
        entries = list(log.entries())
        assert (log.count, dict(log.by_status), log.repairs) == (4, {"ok": 2, "rejected": 1, "failed": 1}, 1)
    assert [e["key"] for e in entries] == ["main:1", "main:2", "main:3", "main:4"]
    assert entries[0]["notes"] == ["duplicate rollout id: 2 attempts share it"]
    assert entries[2]["notes"] == ["gap", "duplicate rollout id: 2 attempts share it"]
    assert "notes" not in entries[1]
    assert "notes" not in entries[3]
    assert entries[1]["reason"] == "ValueError: x"
    assert entries[2]["repaired"] is True
    assert entries[3]["status"] == "failed"
    assert entries[3]["reason"].startswith("RecursionError")
