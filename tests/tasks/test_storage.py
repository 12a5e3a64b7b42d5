"""The storage layer on local disk, memory:// and S3 (listing): streaming lines, atomic writes, create-if-absent."""

from __future__ import annotations

from pathlib import Path

import pytest

import tasks.storage.fs
from tasks.storage import FileEntry, InputNotFound, Location, atomic_writer
from tasks.storage.base import PermanentStorageError, TransientStorageError, classify
from tasks.storage.fs import _entry_of


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


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64])
def test_iter_lines_across_block_boundaries(root: Location, monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    """Lines longer than a block, newlines at block edges, empty lines: as splitting the whole file."""
    monkeypatch.setattr(tasks.storage.fs, "READ_BLOCK", block)
    data = b"\n".join([b"", b"a", b"0123456789abcdef", b"", b"\xff\xfe", b"xy" * 9, b"tail"])
    f = root.child("blocks.jsonl")
    f.write_bytes(data)
    expected, offset = [], 0
    for number, line in enumerate(data.split(b"\n"), start=1):
        expected.append((number, offset, line))
        offset += len(line) + 1
    assert list(f.iter_lines()) == expected
    f.write_bytes(data + b"\n")
    assert list(f.iter_lines()) == expected


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


def _fsspec_listing(folder: Location) -> list[FileEntry]:
    """What fsspec's own ``ls`` says, as entries: the streamed listings must agree with it."""
    folder.fs.invalidate_cache(folder.path)
    return sorted((_entry_of(i) for i in folder.fs.ls(folder.path, detail=True) if i["type"] == "file"), key=lambda e: e.name)


def test_streamed_listing_equals_fsspec_ls(root: Location) -> None:
    for name in ["b.capture.jsonl", "a.capture.incomplete", "sub/c.txt"]:
        root.child("dir", *name.split("/")).write_bytes(b"x" * len(name))
    assert root.child("dir").list_files() == _fsspec_listing(root.child("dir"))


def test_streamed_s3_listing_spans_pages(s3: str) -> None:
    """Over 1,000 objects: s3fs's pages, read one at a time, give what its ls gives."""
    import s3fs

    fs = s3fs.S3FileSystem()
    fs.mkdir("bucket")
    fs.pipe({f"bucket/job/calls/{i:04d}.capture.jsonl": b"{}\n" * (i % 3) for i in range(1005)} | {"bucket/job/calls/sub/x": b""})
    folder = Location("s3://bucket/job/calls")
    listed = folder.list_files()
    assert len(listed) == 1005 and listed == _fsspec_listing(folder)


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
