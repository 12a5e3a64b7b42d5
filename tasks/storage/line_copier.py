"""The program ``LineWriter`` runs beside the flow: it copies lines into a local file, in the order it is told.

Run as ``python -I -S line_copier.py FD``, where FD is the target's descriptor, inherited and
positioned where the lines go. It reads records from stdin until it closes (each record is
followed by a newline in the target):

* ``P`` + 4-byte length + path: the local file the next copies come from;
* ``C`` + 8-byte offset + 8-byte length: copy that many bytes from the current file, by the
  kernel (``os.copy_file_range``), or read and written once the kernel refuses;
* ``B`` + 8-byte length + bytes: write these bytes.

It imports nothing beyond the standard library's built-ins, so it starts in milliseconds; any
failure ends it with status 1 and one line on stderr, which ``LineWriter`` raises.
"""

from __future__ import annotations

import os
import struct
import sys
from typing import BinaryIO

PATH = struct.Struct("<I")
COPY = struct.Struct("<QQ")
BYTES = struct.Struct("<Q")


def _exactly(stream: BinaryIO, size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError(f"a record cut short: {len(data)} of {size} bytes")
    return data


def write_all(fd: int, data: bytes | memoryview) -> None:
    """All of ``data`` to ``fd`` (a write may take only part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _Copier:
    """Copies by the kernel while it accepts them; reads and writes from the first refusal on."""

    def __init__(self, target: int) -> None:
        self._target = target
        self._source = -1
        self._kernel = hasattr(os, "copy_file_range")

    def open(self, path: str) -> None:
        if self._source >= 0:
            os.close(self._source)
        self._source = os.open(path, os.O_RDONLY)

    def copy(self, offset: int, length: int) -> None:
        end = offset + length
        while offset < end:
            step = 0
            if self._kernel:
                try:
                    step = os.copy_file_range(self._source, self._target, end - offset, offset)
                except OSError:  # no copy_file_range here (kernel, filesystem)
                    self._kernel = False
                if step == 0:  # refused, or a filesystem that copies nothing: read it from here on
                    self._kernel = False
                    continue
            else:
                data = os.pread(self._source, min(end - offset, 1 << 24), offset)
                if not data:
                    raise EOFError(f"the source ends at byte {offset}, before its line's end at {end}")
                write_all(self._target, data)
                step = len(data)
            offset += step


def main(target: int, stream: BinaryIO) -> None:
    """Every record of ``stream`` into ``target``, each followed by a newline."""
    copier = _Copier(target)
    while kind := stream.read(1):
        if kind == b"P":
            (size,) = PATH.unpack(_exactly(stream, PATH.size))
            copier.open(os.fsdecode(_exactly(stream, size)))
            continue
        if kind == b"C":
            copier.copy(*COPY.unpack(_exactly(stream, COPY.size)))
        elif kind == b"B":
            (size,) = BYTES.unpack(_exactly(stream, BYTES.size))
            write_all(target, _exactly(stream, size))
        else:
            raise ValueError(f"unknown record {kind!r}")
        write_all(target, b"\n")


if __name__ == "__main__":
    try:
        main(int(sys.argv[1]), sys.stdin.buffer)
    except Exception as exc:  # noqa: BLE001 - the one line LineWriter raises
        sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
        sys.exit(1)
