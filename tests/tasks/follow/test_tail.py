"""Tailing a followed file: complete lines only, by size; a truncated or replaced file stops the follow naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.follow.tail import FileTail, FollowedFileChanged, JobTail
from tasks.storage import Location


def test_a_half_written_line_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "rollouts.jsonl"
    tail = FileTail(Location(str(path)))
    assert tail.new_lines() == []  # not written yet: not an error
    path.write_bytes(b'{"a": 1}\n{"b"')
    assert tail.new_lines() == [(1, 0, b'{"a": 1}')]
    assert tail.new_lines() == []
    with path.open("ab") as f:
        f.write(b': 2}\n\n{"c": 3}\n')
    assert tail.new_lines() == [(2, 9, b'{"b": 2}'), (3, 18, b""), (4, 19, b'{"c": 3}')]


@pytest.mark.parametrize("damage", ["truncated", "replaced"])
def test_a_truncated_or_replaced_file_is_named(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "rollouts.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n')
    tail = FileTail(Location(str(path)))
    tail.new_lines()
    path.write_bytes(b'{"a": 1}\n' if damage == "truncated" else b'{"x": 1}\n{"y": 2}\n{"z": 3}\n')
    with pytest.raises(FollowedFileChanged, match=f"rollouts.jsonl was {damage} while followed") as raised:
        tail.new_lines()
    assert len(str(raised.value).splitlines()) == 1


def test_new_rows_become_the_attempts_discovery_makes_of_them(tmp_path: Path) -> None:
    from tasks.discover.scan import discover
    from tasks.inputs.shards import Shard

    captures = tmp_path / "model-calls"
    captures.mkdir()
    (captures / "0-0.capture.jsonl").write_bytes(b"{}\n")
    rows = [b'{"_ng_task_index": 0, "_ng_rollout_index": %d}\n' % r for r in range(3)]
    (tmp_path / "rollouts_materialized_inputs.jsonl").write_bytes(b"".join(rows))
    path = tmp_path / "rollouts.jsonl"
    path.write_bytes(rows[1] + rows[0][:10])
    tail = JobTail(str(path), None, {}, Location(str(captures)))
    first = tail.look(now=1000.0)
    assert [a.line for a in first.attempts] == [1]
    assert tail.counts() == (1, 0, 3)
    assert sorted(tail.outstanding()) == ["0-0", "0-2"]
    path.write_bytes(rows[1] + rows[0] + rows[2])
    second = tail.look(now=1001.0)
    assert tail.outstanding() == []
    with discover((Shard(Location(str(path))),), Location(str(captures))) as plan:
        assert list(plan.attempts) == first.attempts + second.attempts  # same keys, lines, offsets, captures, fingerprints
