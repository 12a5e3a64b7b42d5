"""LineWriter: lines copied from local files by the kernel, or written, give the same bytes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tasks.storage import Location, atomic_writer
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


def test_local_lines_are_copied_by_the_kernel(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = os.copy_file_range

    def counted(*args: int) -> int:
        calls.append(args[2:])
        return real(*args)

    monkeypatch.setattr(os, "copy_file_range", counted)
    _written(source, Location(str(tmp_path / "out.jsonl")))
    assert (tmp_path / "out.jsonl").read_bytes() == b"first\n" + EXPECTED
    assert calls == [(len(line), offset) for line, offset in LINES]


def test_a_refused_copy_writes_the_lines_bytes_from_then_on(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def refused(*args: int) -> int:
        calls.append(args)
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "copy_file_range", refused)
    _written(source, Location(str(tmp_path / "out.jsonl")))
    assert (tmp_path / "out.jsonl").read_bytes() == b"first\n" + EXPECTED
    assert len(calls) == 1


def test_a_short_source_leaves_the_rest_to_the_lines_bytes(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.copy_file_range
    monkeypatch.setattr(os, "copy_file_range", lambda src, dst, count, offset: real(src, dst, min(count, 3), offset) if count > 3 else 0)
    _written(source, Location(str(tmp_path / "out.jsonl")))
    assert (tmp_path / "out.jsonl").read_bytes() == b"first\n" + EXPECTED


def test_other_stores_get_the_lines_bytes(source: Path) -> None:
    target = Location("memory://lines/out.jsonl")
    _written(source, target)
    assert target.read_bytes() == b"first\n" + EXPECTED
