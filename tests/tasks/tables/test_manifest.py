"""The streaming reader of manifest.json: the values asked for and the attempt entries, whatever the layout."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from evidence import Streamed
from evidence.models.run import manifest_chunks
from tasks.storage import Location
from tasks.tables.manifest import ManifestError, ManifestStream, top_level

ATTEMPTS = [
    {"key": "main:1", "line": 1, "source": "main", "status": "ok", "rollout_id": "0-0"},
    {
        "key": "main:3",
        "line": 3,
        "source": "main",
        "status": "failed",
        "reason": 'ValueError: "}]:{[" \\ (in health checks)',
        "notes": ["a", "b"],
    },
    {
        "key": "0:failures:2",
        "line": 2,
        "source": "failures",
        "status": "rejected",
        "rollout_id": None,
        "nested": {"attempts": [1, {"x": []}]},
    },
]
DOCUMENT: dict[str, Any] = {
    "run": {
        "run_id": "r1",
        "job_id": "j",
        "run_dir": "memory://out/j/runs/r1",
        "scope": "full",
        "package_version": "0.1.0",
        "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:01:00+00:00",
        "resumed": False,
        "note": '{not [a key]: "attempts"}',
    },
    "parameters": {"rollouts": ["a.jsonl", "b.jsonl"]},
    "config_fingerprint": "abc",
    "inputs": {"fingerprint": "f", "files": {f"model-calls/{i}.capture.jsonl": {"size": i} for i in range(50)}},
    "shards": [{"file": "a.jsonl"}, {"file": "b.jsonl"}],
    "counts": {"attempts": 3, "rows": {"main": 2}},
    "attempts": ATTEMPTS,
    "skipped_lines": [],
    "timings": {"discover_s": 0.1},
}


def _layouts() -> dict[str, bytes]:
    streamed = {**DOCUMENT, "attempts": Streamed(lambda: iter(ATTEMPTS))}
    return {
        "as the stage writes it": b"".join(manifest_chunks(streamed)),
        "indented": orjson.dumps(DOCUMENT, option=orjson.OPT_INDENT_2),
        "one line": orjson.dumps(DOCUMENT),
    }


@pytest.mark.parametrize("layout", list(_layouts()))
def test_values_and_items_are_those_of_the_document(layout: str) -> None:
    lines = _layouts()[layout].split(b"\n")
    found = list(top_level(lines, frozenset({"run", "shards", "counts"}), "attempts"))
    assert found == [("run", DOCUMENT["run"]), ("shards", DOCUMENT["shards"]), ("counts", DOCUMENT["counts"])] + [
        ("attempts", a) for a in ATTEMPTS
    ]


def test_manifest_stream_reads_head_then_attempts(memfs: None) -> None:
    location = Location("memory://run/manifest.json")
    location.write_bytes(_layouts()["as the stage writes it"])
    stream = ManifestStream(location)
    head = stream.head()
    assert (head.run.run_id, head.run.job_id, head.run.finished_at) == ("r1", "j", "2026-01-01T00:01:00+00:00")
    assert [shard.file for shard in head.shards] == ["a.jsonl", "b.jsonl"]
    entries = list(stream.attempts())
    assert [(e.key, e.line, e.source, e.status, e.rollout_id) for e in entries] == [
        ("main:1", 1, "main", "ok", "0-0"),
        ("main:3", 3, "main", "failed", None),
        ("0:failures:2", 2, "failures", "rejected", None),
    ]
    assert (entries[1].reason, entries[1].notes, entries[2].shard) == ('ValueError: "}]:{[" \\ (in health checks)', ("a", "b"), 0)


def test_an_attempt_entry_without_its_status_is_refused(memfs: None) -> None:
    location = Location("memory://run/manifest.json")
    document = {**DOCUMENT, "attempts": [ATTEMPTS[0], {"key": "main:2", "line": 2, "source": "main"}]}
    location.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    stream = ManifestStream(location)
    stream.head()
    entries = stream.attempts()
    assert next(entries).key == "main:1"
    with pytest.raises(ManifestError, match="without key, line, source and status"):
        next(entries)


def test_a_manifest_without_shards_is_refused(memfs: None) -> None:
    location = Location("memory://run/manifest.json")
    location.write_bytes(orjson.dumps({"run": {}, "attempts": ATTEMPTS}, option=orjson.OPT_INDENT_2))
    with pytest.raises(ManifestError, match="no run and shards"):
        ManifestStream(location).head()
