"""The storage layer on local disk and memory://: streaming lines, atomic writes, create-if-absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.storage import InputNotFound, Location, atomic_writer
from tasks.storage.base import PermanentStorageError, TransientStorageError, classify


@pytest.fixture(params=["local", "memory"])
def root(request: pytest.FixtureRequest, tmp_path: Path, memfs: None) -> Location:
    return Location(str(tmp_path) if request.param == "local" else "memory://root")


def test_iter_lines_gives_numbers_offsets_and_unterminated_tail(root: Location) -> None:
    data = b'{"a":1}\n\n{"b":2}\r\nlast'
    f = root.child("x.jsonl")
    f.write_bytes(data)
    lines = list(f.iter_lines())
    assert lines == [(1, 0, b'{"a":1}'), (2, 8, b""), (3, 9, b'{"b":2}\r'), (4, 18, b"last")]
    for _, offset, raw in lines:
        assert data[offset : offset + len(raw)] == raw


def test_read_range_returns_exact_slice(root: Location) -> None:
    f = root.child("r.bin")
    f.write_bytes(b"0123456789")
    assert f.read_range(2, 5) == b"234"


def test_atomic_writer_publishes_nothing_on_error(root: Location) -> None:
    target = root.child("out", "file.json")
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_writer(target) as f:
            f.write(b"partial")
            raise RuntimeError("boom")
    assert target.read_bytes() == b"old"
    leftovers = [e.name for e in root.child("out").list_files() if e.name != "file.json"]
    assert leftovers == []


def test_write_new_claims_once(root: Location) -> None:
    target = root.child("runs", "r1", "params.json")
    assert target.write_new(b"first") is True
    assert target.write_new(b"second") is False
    assert target.read_bytes() == b"first"


def test_missing_file_is_input_not_found(root: Location) -> None:
    with pytest.raises(InputNotFound):
        root.child("nope.jsonl").read_bytes()


def test_list_files_is_flat_and_sorted(root: Location) -> None:
    for name in ["b.capture.jsonl", "a.capture.incomplete", "sub/c.txt"]:
        root.child("dir", *name.split("/")).write_bytes(b"x")
    assert [e.name for e in root.child("dir").list_files()] == ["a.capture.incomplete", "b.capture.jsonl"]


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (FileNotFoundError("x"), InputNotFound),
        (PermissionError("x"), PermanentStorageError),
        (ConnectionResetError("reset"), TransientStorageError),
        (OSError("503 SlowDown"), TransientStorageError),
        (TimeoutError(), TransientStorageError),
    ],
)
def test_classify(exc: BaseException, kind: type) -> None:
    assert isinstance(classify("u", exc), kind)
