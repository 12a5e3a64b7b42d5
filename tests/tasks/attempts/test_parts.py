"""Reading parts back: the current part of each attempt, whatever else the segment folder holds."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from evidence import AttemptOutcome, AttemptPart, Status, encode_part
from tasks.attempts.parts import PartIndex, PartMissing, encode_segment, read_parts, segment_name
from tasks.discover.refs import AttemptRef
from tasks.storage import Location


def _attempt(line: int, fingerprint: str) -> AttemptRef:
    return AttemptRef("failures", line, 0, 0, line, None, None, False, fingerprint)


def _write(folder: Path, lines: range, fingerprint: str, name: str | None = None) -> None:
    """A segment of ``lines`` whose rows say which segment and fingerprint they came from."""
    parts = []
    for line in lines:
        row = f'{{"line": {line}, "from": "{fingerprint}@{lines.start}-{lines.stop - 1}"}}'.encode()
        outcome = AttemptOutcome(Status.OK, None, (), False, None, row, None)
        parts.append((_attempt(line, fingerprint), encode_part(AttemptPart(fingerprint, 0.0, outcome))))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / (name or segment_name(parts))).write_bytes(b"".join(encode_segment(parts)))


def _read(folder: Path, attempts: list[AttemptRef]) -> list[str]:
    """Each part's line, checked against the bytes at the place given for it in its segment file."""
    lines = []
    for _, part, place in read_parts(Location(str(folder)), attempts):
        line = bytes(part.outcome.line)
        assert place is not None
        with open(place.path, "rb") as segment:
            segment.seek(place.offset)
            assert segment.read(len(line)) == line
        lines.append(line.decode())
    return lines


def test_each_attempt_gets_its_current_part_across_overlapping_segments(tmp_path: Path) -> None:
    """A retried group rewrote lines 3-8 with new inputs; line 9-12 were never redone."""
    _write(tmp_path, range(1, 7), "old")
    _write(tmp_path, range(7, 13), "old")
    _write(tmp_path, range(3, 9), "new")
    attempts = [_attempt(line, "new" if 3 <= line <= 8 else "old") for line in range(1, 13)]
    rows = _read(tmp_path, attempts)
    assert rows == [
        *(f'{{"line": {n}, "from": "old@1-6"}}' for n in (1, 2)),
        *(f'{{"line": {n}, "from": "new@3-8"}}' for n in range(3, 9)),
        *(f'{{"line": {n}, "from": "old@7-12"}}' for n in range(9, 13)),
    ]
    index = PartIndex(Location(str(tmp_path)), range(5, 10))
    assert [index.current(attempt).segment[:19] for attempt in attempts[4:9]] == [  # type: ignore[union-attr]
        "000000003-000000008",
        "000000003-000000008",
        "000000003-000000008",
        "000000003-000000008",
        "000000007-000000012",
    ]


def test_of_two_current_parts_the_first_segment_by_lines_wins(tmp_path: Path) -> None:
    """By first line, then last: names past nine digits sort otherwise."""
    _write(tmp_path, range(1, 5), "same")
    _write(tmp_path, range(2, 4), "same")
    assert _read(tmp_path, [_attempt(n, "same") for n in range(1, 5)]) == [f'{{"line": {n}, "from": "same@1-4"}}' for n in range(1, 5)]
    _write(tmp_path / "long", range(1_000_000_001, 1_000_000_002), "same")  # 1000000001-1000000001.seg sorts first by name
    _write(tmp_path / "long", range(200_000_000, 200_000_001), "same")
    rows = _read(tmp_path / "long", [_attempt(n, "same") for n in (200_000_000, 1_000_000_001)])
    assert [row.split('"from": ')[1] for row in rows] == ['"same@200000000-200000000"}', '"same@1000000001-1000000001"}']


def test_damaged_and_foreign_files_are_not_read_as_parts(tmp_path: Path) -> None:
    _write(tmp_path, range(1, 3), "ok")
    _write(tmp_path, range(3, 5), "ok", name="000000003-000000004.seg.tmp")  # not a segment's name
    _write(tmp_path, range(5, 7), "ok", name="000000001-000000002x.seg")
    _write(tmp_path, range(7, 9), "ok", name="000000001-000000002.seg.bak")
    _write(tmp_path, range(16, 31, 14), "ok", name="000000015-000000018.seg")  # line 30 is not among the lines its name says
    _write(tmp_path, range(9, 11), "ok", name="000000009-000000010-ab-cd.seg")
    _write(tmp_path, range(11, 13), "ok", name="000000011-000000012.seg")  # before names had a token: a segment
    twice = tmp_path / "000000017-000000018-0a1b2c3d.seg"  # an index that names a line twice
    _write(tmp_path, range(17, 19), "ok", name=twice.name)
    twice.write_bytes(twice.read_bytes().replace(b"[[17,", b"[[18,", 1))
    truncated = tmp_path / "000000013-000000014-0a1b2c3d.seg"
    _write(tmp_path, range(13, 15), "ok", name=truncated.name)
    truncated.write_bytes(truncated.read_bytes()[:-1])
    assert _read(tmp_path, [_attempt(n, "ok") for n in (1, 2, 11, 12)]) == [
        *(f'{{"line": {n}, "from": "ok@1-2"}}' for n in (1, 2)),
        *(f'{{"line": {n}, "from": "ok@11-12"}}' for n in (11, 12)),
    ]
    for line in (3, 5, 9, 13, 16, 18):
        with pytest.raises(PartMissing, match=f"failures:{line}"):
            _read(tmp_path, [_attempt(line, "ok")])


def test_a_stale_part_is_missing(tmp_path: Path) -> None:
    _write(tmp_path, range(1, 3), "before")
    with pytest.raises(PartMissing, match="failures:2"):
        _read(tmp_path, [_attempt(1, "before"), _attempt(2, "after")])


def test_attempts_must_come_in_line_order(tmp_path: Path) -> None:
    """Segments are let go once the lines pass them: an earlier line afterwards is a caller's error."""
    _write(tmp_path, range(1, 3), "ok")
    _write(tmp_path, range(3, 5), "ok")
    with pytest.raises(ValueError, match="out of line order"):
        _read(tmp_path, [_attempt(3, "ok"), _attempt(1, "ok")])


def test_a_segment_is_let_go_after_its_last_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reduce holds the segments open at the current line, not an entry per attempt of the job."""
    from tasks.attempts import parts

    for first in range(1, 200, 2):
        _write(tmp_path, range(first, first + 2), "ok")
    held: list[int] = []
    real = parts._OpenSegments.current

    def observed(self: parts._OpenSegments, attempt: AttemptRef) -> parts.PartEntry | None:
        entry = real(self, attempt)
        held.append(len(self._open))
        return entry

    monkeypatch.setattr(parts._OpenSegments, "current", observed)
    assert len(_read(tmp_path, [_attempt(n, "ok") for n in range(1, 201)])) == 200
    assert max(held) == 1


def test_a_segment_s_pages_are_let_go_once_the_reader_is_past_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Released in order, each once every one of its lines was read."""
    from tasks.attempts import parts

    for first in (1, 3, 5):
        _write(tmp_path, range(first, first + 2), "ok")
    events: list[str] = []

    def released(view: bytes | memoryview) -> None:
        index = orjson.loads(bytes(view).split(b"\n")[1])
        events.append(f"release lines {index[0][0]}-")

    monkeypatch.setattr(parts, "release_view", released)
    for _, part, _ in read_parts(Location(str(tmp_path)), [_attempt(n, "ok") for n in range(1, 7)]):
        events.append(f"line {orjson.loads(bytes(part.outcome.line))['line']}")
    assert events == [
        "line 1",
        "line 2",
        "release lines 1-",
        "line 3",
        "line 4",
        "release lines 3-",
        "line 5",
        "line 6",
        "release lines 5-",
    ]
