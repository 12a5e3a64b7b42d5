"""LineWriter: lines copied from local files beside the flow, or written, give the same bytes."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from tasks.storage import Location, atomic_writer
from tasks.storage.line_copier import BYTES, COPY, PATH, main
from tasks.storage.lines import FilePlace, LineWriter

SOURCE = b"head\n" + b'{"a": 1}' + b"xx" + b'{"b": [2, 3]}' + b"tail"
LINES = [(b'{"a": 1}', 5), (b'{"b": [2, 3]}', 15)]
EXPECTED = b'{"a": 1}\n{"b": [2, 3]}\n'


def _written(source: Path, target: Location) -> None:
    with atomic_writer(target) as out, LineWriter(out) as lines:
        lines.write(b"first", None)  # a line with no place is written
        for line, offset in LINES:
            lines.write(memoryview(line), FilePlace(str(source), offset))


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "segment.seg"
    path.write_bytes(SOURCE)
    assert [SOURCE[offset : offset + len(line)] for line, offset in LINES] == [line for line, _ in LINES]
    return path


def test_local_lines_are_copied_in_order(source: Path, tmp_path: Path) -> None:
    _written(source, Location(str(tmp_path / "out.jsonl")))
    assert (tmp_path / "out.jsonl").read_bytes() == b"first\n" + EXPECTED


def test_other_stores_get_the_lines_bytes(source: Path) -> None:
    target = Location("memory://lines/out.jsonl")
    _written(source, target)
    assert target.read_bytes() == b"first\n" + EXPECTED


def test_a_failed_copy_raises_and_publishes_nothing(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    with (
        pytest.raises(OSError, match=r"copying lines into .*: FileNotFoundError"),
        atomic_writer(Location(str(target))) as out,
        LineWriter(out) as lines,
    ):
        lines.write(b"x", FilePlace(str(tmp_path / "gone.seg"), 0))
    assert not target.exists()
    assert os.listdir(tmp_path) == ["segment.seg"]


def test_an_error_in_the_block_stops_the_copier(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"

    def stopped() -> None:
        with atomic_writer(Location(str(target))) as out, LineWriter(out) as lines:
            lines.write(b'{"a": 1}', FilePlace(str(source), 5))
            raise KeyError("stop")

    with pytest.raises(KeyError):
        stopped()
    assert not target.exists()


def _records(source: Path) -> bytes:
    path = os.fsencode(str(source))
    records = b"B" + BYTES.pack(5) + b"first" + b"P" + PATH.pack(len(path)) + path
    return records + b"".join(b"C" + COPY.pack(offset, len(line)) for line, offset in LINES)


def _copied(source: Path, tmp_path: Path) -> bytes:
    target = tmp_path / "copied.jsonl"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT)
    try:
        main(fd, io.BytesIO(_records(source)))
    finally:
        os.close(fd)
    return target.read_bytes()


def test_the_copier_uses_the_kernel(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = os.copy_file_range

    def counted(*args: int) -> int:
        calls.append(args[2:])
        return real(*args)

    monkeypatch.setattr(os, "copy_file_range", counted)
    assert _copied(source, tmp_path) == b"first\n" + EXPECTED
    assert calls == [(len(line), offset) for line, offset in LINES]


def test_a_refused_copy_reads_the_lines_from_then_on(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def refused(*args: int) -> int:
        calls.append(args)
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "copy_file_range", refused)
    assert _copied(source, tmp_path) == b"first\n" + EXPECTED
    assert len(calls) == 1


def test_a_copy_that_stops_short_reads_the_rest(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.copy_file_range
    monkeypatch.setattr(os, "copy_file_range", lambda src, dst, count, offset: real(src, dst, min(count, 3), offset) if count > 3 else 0)
    assert _copied(source, tmp_path) == b"first\n" + EXPECTED


def test_a_source_shorter_than_its_line_is_an_error(source: Path, tmp_path: Path) -> None:
    path = os.fsencode(str(source))
    records = b"P" + PATH.pack(len(path)) + path + b"C" + COPY.pack(len(SOURCE) - 2, 10)
    fd = os.open(tmp_path / "copied.jsonl", os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(EOFError, match="the source ends at byte"):
            main(fd, io.BytesIO(records))
    finally:
        os.close(fd)
