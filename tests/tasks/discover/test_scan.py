"""Discovery on memory:// (and local disk for file names): one attempt per object row, capture claims, orphans, fingerprints."""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

import orjson
import pytest

import tasks.discover.inputs
import tasks.discover.scan
from tasks.discover.inputs import fingerprint_inputs, list_inputs
from tasks.discover.scan import discover
from tasks.inputs.shards import Shard
from tasks.storage import InputNotFound, Location, PermanentStorageError

ROWS = [
    {"_ng_task_index": 0, "_ng_rollout_index": 0},
    {"_ng_task_index": 0, "_ng_rollout_index": 1, "_ng_attempt_index": 1},
    {"_ng_rollout_id": "../x"},
    {"no": "identity"},
]


def _job(rows: list[bytes], captures: dict[str, bytes]) -> tuple[Location, Location]:
    root = Location("memory://job")
    root.child("rollouts.jsonl").write_bytes(b"\n".join(rows) + b"\n")
    for name, data in captures.items():
        root.child("model-calls", name).write_bytes(data)
    return root.child("rollouts.jsonl"), root.child("model-calls")


@pytest.mark.usefixtures("memfs")
def test_attempts_keys_ids_captures_and_skipped_lines() -> None:
    lines = [orjson.dumps(ROWS[0]), b"", b"[1, 2]", orjson.dumps(ROWS[1]), b"{broken", orjson.dumps(ROWS[2]), orjson.dumps(ROWS[3])]
    main, captures = _job(lines, {"0-0.capture.jsonl": b"{}\n", "0-1-a1.capture.incomplete": b"", "9-9.capture.jsonl": b"{}\n"})
    with discover([Shard(main)], captures) as plan:
        attempts = list(plan.attempts)
        files = dict(plan.inputs)
    assert [(a.key, a.out_line, a.rollout_id) for a in attempts] == [
        ("main:1", 1, "0-0"),
        ("main:4", 2, "0-1-a1"),
        ("main:6", 3, None),  # an invalid id is never a file name
        ("main:7", 4, None),
    ]
    first, retry = attempts[0], attempts[1]
    assert first.capture is not None
    assert first.capture.size == 3
    assert not first.incomplete
    assert retry.capture is None
    assert retry.incomplete
    assert [(s.line, s.reason.split(":")[0]) for s in plan.skipped] == [(3, "not a JSON object"), (5, "invalid JSON")]
    assert plan.orphans == ["9-9.capture.jsonl"]
    data = main.read_bytes()
    assert (
        list(files)
        == sorted(files)
        == ["model-calls/0-0.capture.jsonl", "model-calls/0-1-a1.capture.incomplete", "model-calls/9-9.capture.jsonl", "rollouts.jsonl"]
    )
    for attempt in attempts:
        assert orjson.loads(data[attempt.offset : attempt.offset + attempt.length]) == ROWS[attempt.out_line - 1]


@pytest.mark.usefixtures("memfs")
@pytest.mark.parametrize("span", [1, 7, 40])
def test_spans_scanned_by_a_pool_give_the_plan_of_one_scan(span: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut anywhere (inside rows, at newlines, between blank lines), the plan is the same."""
    from concurrent.futures import ThreadPoolExecutor

    import tasks.discover.scan

    lines = [orjson.dumps(ROWS[0]), b"", b"[1, 2]", orjson.dumps(ROWS[1]), b"{broken", b"", orjson.dumps(ROWS[2]), orjson.dumps(ROWS[3])]
    main, captures = _job(lines, {"0-0.capture.jsonl": b"{}\n", "0-1-a1.capture.incomplete": b"", "9-9.capture.jsonl": b"{}\n"})

    def plan_of(pool: ThreadPoolExecutor | None) -> tuple:
        with discover([Shard(main)], captures, pool) as plan:
            return list(plan.attempts), plan.skipped, plan.orphans, plan.accounting, plan.shards

    whole = plan_of(None)
    monkeypatch.setattr(tasks.discover.scan, "SCAN_SPAN_BYTES", span)
    with ThreadPoolExecutor(2) as pool:
        assert plan_of(pool) == whole
    assert len(whole[0]) == 4
    assert len(whole[1]) == 2


@pytest.mark.usefixtures("memfs")
def test_spans_carry_the_capture_listing_by_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a span sends its worker does not grow with the job's captures (the listing goes once, as a file)."""
    import pickle
    from concurrent.futures import ThreadPoolExecutor

    lines = [orjson.dumps(ROWS[0]), orjson.dumps(ROWS[1]), orjson.dumps(ROWS[2])]
    main, captures = _job(lines, {f"{k}-0.capture.jsonl": b"{}\n" for k in range(300)})
    sent: list[int] = []

    class Counting(ThreadPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
            sent.append(len(pickle.dumps(args)))
            return super().submit(fn, *args, **kwargs)

    monkeypatch.setattr(tasks.discover.scan, "SCAN_SPAN_BYTES", 8)
    with Counting(2) as pool, discover([Shard(main)], captures, pool) as plan:
        assert len(list(plan.attempts)) == 3
    assert len(sent) > 3
    assert max(sent) < 1000


@pytest.mark.usefixtures("memfs")
def test_fingerprints_follow_the_bytes() -> None:
    main, captures = _job([orjson.dumps(ROWS[0])], {"0-0.capture.jsonl": b"{}\n"})
    with discover([Shard(main)], captures) as before:
        captures.child("0-0.capture.jsonl").write_bytes(b"{}\n{}\n")
        with discover([Shard(main)], captures) as after:
            assert next(iter(before.attempts)).fingerprint != next(iter(after.attempts)).fingerprint
    assert before.fingerprint != after.fingerprint == fingerprint_inputs(list_inputs([Shard(main)], captures))


@pytest.mark.usefixtures("memfs")
def test_capture_folders_listed_are_those_0_7_0_would_find() -> None:
    """Folders named as a capture file or marker are inputs (without size or version: what is
    inside never matters); other folders are not, nor a folder named as an object that exists
    (an S3 prefix beside its object)."""
    main, captures = _job(
        [orjson.dumps(ROWS[0])],
        {
            "0-0.capture.jsonl/inner": b"x",
            "0-1.capture.incomplete/inner": b"x",
            "sub/x.capture.jsonl": b"{}\n",
            "1-0.capture.jsonl": b"{}\n",
        },
    )
    listed = [asdict(entry) for entry in list_inputs([Shard(main)], captures).captures]
    assert [(e["name"], e["folder"]) for e in listed] == [
        ("0-0.capture.jsonl", True),
        ("0-1.capture.incomplete", True),
        ("1-0.capture.jsonl", False),
    ]
    assert [(e["size"], e["version"]) for e in listed[:2]] == [(0, ""), (0, "")]


def test_local_names_that_do_not_resolve_are_absent_and_other_things_present(tmp_path: Path) -> None:
    """What ``Path.exists()`` (0.7.0's lookup) says: a looping or dangling symlink is not there,
    so it neither fails discovery nor becomes a capture; a FIFO named as a marker is one."""
    captures = tmp_path / "calls"
    captures.mkdir()
    (captures / "0-0.capture.jsonl").symlink_to("0-0.capture.jsonl")  # a loop
    (captures / "loop.txt").symlink_to("loop.txt")
    (captures / "0-1.capture.jsonl").symlink_to("missing")
    os.mkfifo(captures / "0-1.capture.incomplete")
    (captures / "1-0.capture.jsonl").write_bytes(b"{}\n")
    main = tmp_path / "rollouts.jsonl"
    main.write_bytes(
        b"".join(
            orjson.dumps(row) + b"\n"
            for row in ({"_ng_task_index": 0, "_ng_rollout_index": 0}, {"_ng_task_index": 0, "_ng_rollout_index": 1})
        )
    )
    with discover([Shard(Location(str(main)))], Location(str(captures))) as plan:
        attempts = [(a.rollout_id, a.capture, a.incomplete) for a in plan.attempts]
    assert attempts == [("0-0", None, False), ("0-1", None, True)]
    assert plan.orphans == ["1-0.capture.jsonl"]


def test_an_s3_prefix_named_as_an_existing_capture_object_is_not_a_folder(s3: str) -> None:
    import s3fs

    s3fs.S3FileSystem().mkdir("bucket")
    s3fs.S3FileSystem().pipe(
        {
            "bucket/job/rollouts.jsonl": orjson.dumps(ROWS[0]) + b"\n",
            "bucket/job/calls/1-0.capture.jsonl": b"{}\n",
            "bucket/job/calls/1-0.capture.jsonl/inner": b"x",
        }
    )
    listed = list_inputs([Shard(Location("s3://bucket/job/rollouts.jsonl"))], Location("s3://bucket/job/calls")).captures
    assert [(entry.name, entry.folder, entry.size) for entry in listed] == [("1-0.capture.jsonl", False, 3)]


@pytest.mark.usefixtures("memfs")
def test_fingerprints_follow_the_part_format(monkeypatch: pytest.MonkeyPatch) -> None:
    """A resume after an upgrade that changed the part format redoes the old parts: their
    attempts' fingerprints no longer match."""
    main, captures = _job([orjson.dumps(ROWS[0])], {"0-0.capture.jsonl": b"{}\n"})
    with discover([Shard(main)], captures) as before:
        monkeypatch.setattr(tasks.discover.scan, "PART_VERSION", tasks.discover.scan.PART_VERSION + 1)
        with discover([Shard(main)], captures) as after:
            assert next(iter(before.attempts)).fingerprint != next(iter(after.attempts)).fingerprint


@pytest.mark.usefixtures("memfs")
def test_missing_inputs_are_errors_not_empty_runs() -> None:
    main, captures = _job([orjson.dumps(ROWS[0])], {"0-0.capture.jsonl": b"{}\n"})
    with pytest.raises(InputNotFound, match="capture directory"):
        discover([Shard(main)], Location("memory://job/typo"))
    with pytest.raises(InputNotFound, match="rollouts file"):
        discover([Shard(Location("memory://job/none.jsonl"))], captures)


@pytest.mark.usefixtures("memfs")
@pytest.mark.parametrize("remote", [False, True])
def test_input_checks_fail_in_order_whether_they_answer_or_raise(remote: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks run at once, yet a missing rollouts file is reported before a capture folder
    whose check raises, and that error before any later answer."""
    _, captures = _job([orjson.dumps(ROWS[0])], {"0-0.capture.jsonl": b"{}\n"})
    monkeypatch.setattr(tasks.discover.inputs, "is_remote", lambda locations: remote)

    def unreadable(self: Location) -> bool:
        raise PermanentStorageError(self.url, "denied")

    monkeypatch.setattr(Location, "is_dir", unreadable)
    with pytest.raises(InputNotFound, match="rollouts file"):
        tasks.discover.inputs.check_inputs([Shard(Location("memory://job/none.jsonl"))], captures)
    with pytest.raises(PermanentStorageError, match="denied"):
        tasks.discover.inputs.check_inputs([Shard(Location("memory://job/rollouts.jsonl"))], captures)


def test_a_capture_file_name_that_is_not_utf8_is_an_orphan(tmp_path: Path) -> None:
    """The name's bytes are fingerprinted; the manifest shows it escaped (JSON holds no such name)."""
    calls = tmp_path / "model-calls"
    calls.mkdir()
    (tmp_path / "rollouts.jsonl").write_bytes(orjson.dumps(ROWS[0]) + b"\n")
    (calls / "0-0.capture.jsonl").write_bytes(b"{}\n")
    os.close(os.open(os.path.join(os.fsencode(calls), b"\xff\xfe.capture.jsonl"), os.O_CREAT | os.O_WRONLY))
    os.close(os.open(os.path.join(os.fsencode(calls), b"notes-\xe9.txt"), os.O_CREAT | os.O_WRONLY))
    main, captures = Location(str(tmp_path / "rollouts.jsonl")), Location(str(calls))
    with discover([Shard(main)], captures) as plan:
        files = dict(plan.inputs)
        assert [a.capture is not None for a in plan.attempts] == [True]
        assert plan.orphans == ["\\xff\\xfe.capture.jsonl"]
        assert sorted(files) == [
            "model-calls/0-0.capture.jsonl",
            "model-calls/\\xff\\xfe.capture.jsonl",
            "model-calls/notes-\\xe9.txt",
            "rollouts.jsonl",
        ]
        assert files["model-calls/notes-\\xe9.txt"].name == "notes-\\xe9.txt"
        orjson.dumps({"files": {k: asdict(v) for k, v in files.items()}, "orphans": plan.orphans})  # the manifest can hold them
        assert plan.fingerprint == fingerprint_inputs(list_inputs([Shard(main)], captures))
    os.rename(os.path.join(os.fsencode(calls), b"\xff\xfe.capture.jsonl"), os.path.join(os.fsencode(calls), b"\xfe\xff.capture.jsonl"))
    with discover([Shard(main)], captures) as renamed:
        assert renamed.fingerprint != plan.fingerprint, "names are fingerprinted by their bytes"


def test_spans_scanned_by_worker_processes_give_the_plan_of_one_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What crosses to a worker process (the file's location, the listing) and back (the spans) pickles."""
    from concurrent.futures import ProcessPoolExecutor

    import tasks.discover.scan

    root = Location(str(tmp_path))
    root.child("rollouts.jsonl").write_bytes(b"\n".join([orjson.dumps(ROWS[0]), b"{broken", orjson.dumps(ROWS[1]), b""]))
    root.child("model-calls", "0-0.capture.jsonl").write_bytes(b"{}\n")
    main, captures = root.child("rollouts.jsonl"), root.child("model-calls")
    with discover([Shard(main)], captures) as plan:
        whole = list(plan.attempts), plan.skipped
    monkeypatch.setattr(tasks.discover.scan, "SCAN_SPAN_BYTES", 16)
    with ProcessPoolExecutor(2) as pool, discover([Shard(main)], captures, pool) as plan:
        assert (list(plan.attempts), plan.skipped) == whole
    assert len(whole[0]) == 2
    assert len(whole[1]) == 1


@pytest.mark.usefixtures("memfs")
def test_attempts_go_out_as_the_scan_plans_them_with_an_estimate_until_it_ends() -> None:
    """The first attempt comes before the file is read to its end; the estimate scales what is
    planned by the bytes left, and is exact once the plan is complete."""
    from tasks.discover.scan import Discovery

    lines = [orjson.dumps({"_ng_task_index": k, "_ng_rollout_index": 0}) for k in range(10)]  # rows of one length
    main, captures = _job([*lines[:5], b"{broken", *lines[5:]], {"0-0.capture.jsonl": b"{}\n", "9-9.capture.jsonl": b"{}\n"})
    with Discovery([Shard(main)], captures) as discovery:
        attempts = discovery.attempts()
        first = next(attempts)
        assert (first.key, discovery.plan.attempts.count, discovery.done) == ("main:1", 1, False)
        assert discovery.estimate() == round(len(main.read_bytes()) / len(lines[0] + b"\n")) == 10  # 1 row in its share of the bytes
        assert discovery.plan.orphans == []  # known once the scan ends
        rest = list(attempts)
        assert (discovery.done, discovery.estimate(), len(rest)) == (True, 10, 9)
        assert discovery.plan.orphans == ["9-9.capture.jsonl"]
        with discover([Shard(main)], captures) as whole:
            assert [first, *rest] == list(whole.attempts)
            assert (discovery.plan.skipped, discovery.plan.fingerprint) == (whole.skipped, whole.fingerprint)


@pytest.mark.usefixtures("memfs")
def test_a_scan_failing_on_a_transient_error_is_made_again_and_hands_each_attempt_out_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from tasks.discover.scan import SCAN_TRIES, Discovery
    from tasks.storage import TransientStorageError

    lines = [orjson.dumps(ROWS[0]), b"[1, 2]", orjson.dumps(ROWS[1]), orjson.dumps(ROWS[2]), orjson.dumps(ROWS[3])]
    main, captures = _job(lines, {"0-0.capture.jsonl": b"{}\n"})
    with discover([Shard(main)], captures) as clean:
        expected = list(clean.attempts), clean.skipped, clean.accounting
    iter_lines, failures = Location.iter_lines, []

    def flaky(self: Location, start: int = 0, end: int | None = None):  # type: ignore[no-untyped-def]
        for line in iter_lines(self, start, end):
            if line[0] == 4 and len(failures) < SCAN_TRIES - 1:  # each scan but the last fails after 2 attempts went out
                failures.append(line[0])
                raise TransientStorageError(self.url, "503 SlowDown")
            yield line

    monkeypatch.setattr(Location, "iter_lines", flaky)
    with Discovery([Shard(main)], captures) as discovery:
        handed = list(discovery.attempts())
        assert (handed, discovery.plan.skipped, discovery.plan.accounting) == expected
    assert len(failures) == SCAN_TRIES - 1
    failures.clear()
    monkeypatch.setattr(tasks.discover.scan, "SCAN_TRIES", 2)
    with Discovery([Shard(main)], captures) as discovery, pytest.raises(TransientStorageError):
        list(discovery.attempts())
