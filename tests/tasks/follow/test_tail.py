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


def test_a_later_shards_main_rows_wait_until_the_shards_before_it_are_closed(tmp_path: Path) -> None:
    """Main rows number on across shards: shard 1's first row is line 3 of the outputs only once shard 0 owes nothing more."""
    (tmp_path / "model-calls").mkdir()

    def row(task: int, rollout: int) -> bytes:
        return b'{"_ng_task_index": %d, "_ng_rollout_index": %d}\n' % (task, rollout)

    for k in (0, 1):
        (tmp_path / f"r-chunk{k}_materialized_inputs.jsonl").write_bytes(row(k, 0) + row(k, 1))
    (tmp_path / "r-chunk0.jsonl").write_bytes(row(0, 0))
    (tmp_path / "r-chunk1.jsonl").write_bytes(row(1, 0))
    tail = JobTail(str(tmp_path / "r-chunk*.jsonl"), None, {}, Location(str(tmp_path / "model-calls")))
    assert [(a.shard, a.out_line) for a in tail.look(now=1.0).attempts] == [(0, 1)]
    with (tmp_path / "r-chunk0.jsonl").open("ab") as f:
        f.write(row(0, 1))
    assert [(a.shard, a.line, a.out_line) for a in tail.look(now=2.0).attempts] == [(0, 2, 2), (1, 1, 3)]


@pytest.mark.parametrize("store", ["memory", "s3"])
def test_an_object_replaced_by_a_longer_one_is_followed_by_its_new_bytes(store: str, request: pytest.FixtureRequest) -> None:
    """An object store has no append: the producer (or a sync) writes the whole object again."""
    if store == "s3":
        import s3fs

        request.getfixturevalue("s3")
        s3fs.S3FileSystem().mkdir("job")
    else:
        request.getfixturevalue("memfs")
    location = Location(f"{store}://job/rollouts.jsonl")
    assert FileTail(location).new_lines() == []  # not there yet
    location.write_bytes(b'{"a": 1}\n')
    tail = FileTail(location)
    assert [raw for _, _, raw in tail.new_lines()] == [b'{"a": 1}']
    location.write_bytes(b'{"a": 1}\n{"b": 2}\n')
    assert [raw for _, _, raw in tail.new_lines()] == [b'{"b": 2}']
    location.write_bytes(b'{"A": 1}\n{"b": 2}\n{"c": 3}\n')
    with pytest.raises(FollowedFileChanged, match="replaced while followed"):
        tail.new_lines()


def test_the_plan_made_from_the_tail_is_discoverys_until_a_capture_changes_after_its_row(tmp_path: Path) -> None:
    from dataclasses import asdict

    from tasks.discover.scan import JobPlan, discover

    captures = tmp_path / "model-calls"
    captures.mkdir()
    for name in ("0-0.capture.jsonl", "0-1.capture.jsonl", "9-9.capture.jsonl", "0-2.capture.incomplete"):
        (captures / name).write_bytes(b"{}\n")
    rows = [b'{"_ng_task_index": 0, "_ng_rollout_index": %d}\n' % r for r in range(4)]
    (tmp_path / "rollouts_materialized_inputs.jsonl").write_bytes(b"".join(rows) + b"not json\n")
    path, failures = tmp_path / "rollouts.jsonl", tmp_path / "rollouts_failures.jsonl"
    path.write_bytes(rows[1] + b"[1]\n\n" + rows[0])
    failures.write_bytes(b'{"_ng_task_index": 0, "_ng_rollout_index": 2, "_ng_failure_class": "timeout"}\n')
    tail = JobTail(str(path), None, {}, Location(str(captures)))
    released = tail.look(now=1.0).attempts
    path.write_bytes(rows[1] + b"[1]\n\n" + rows[0] + rows[1])
    released += tail.look(now=2.0).attempts

    def described(plan: JobPlan) -> tuple[object, ...]:
        shown = (list(plan.attempts), plan.skipped, plan.orphans, plan.accounting, plan.shards, plan.fingerprint)
        return (*shown, [(name, asdict(entry)) for name, entry in plan.inputs])

    main = [a for a in released if a.source == "main"]
    made = tail.plan(main, [a for a in released if a.source != "main"])
    assert isinstance(made, JobPlan)
    shard = tail.shards[0].shard
    with made, discover((shard,), Location(str(captures))) as plan:
        assert (plan.accounting["lost"], len(plan.skipped), plan.orphans) == (1, 1, ["9-9.capture.jsonl"])  # each is covered
        assert described(made) == described(plan)
    (captures / "0-0.capture.jsonl").write_bytes(b"{}\n{}\n")  # a capture that changed after its row was read
    assert tail.plan(main, []) == "the capture of rollout 0-0 changed after its row was processed"
    path.write_bytes(rows[1] + b"[1]\n\n" + rows[0] + rows[1] + b'{"half')
    assert "has bytes past the last complete line read" in str(tail.plan(main, []))
