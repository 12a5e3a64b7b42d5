"""Writing lines that already lie in local files: copied file to file by a program beside the flow.

The reduce's largest output, ``rollouts.jsonl``, is the parts' lines back to back: about as
many bytes as the job's input. Where both the segments and the output are local files, the
flow process only says where each line lies, and ``tasks/storage/line_copier.py``, started
beside it, has the kernel copy the bytes (``os.copy_file_range``) while the flow goes on with
the reduce's folds, on the other core. A thread would not do: each copy's return waits for
the GIL, which the reduce's Python holds, so the copies finished only once the reduce did
(measured: a thread's 0.21 s of copies took 1.84 s beside 1.5 s of busy Python). Anywhere else
(S3, memory) the line's bytes are written by the flow as before.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import NamedTuple, Self

from tasks.storage.line_copier import BYTES, COPY, PATH
from tasks.storage.writes import Writer

__all__ = ["FilePlace", "LineWriter"]

COPIER = Path(__file__).with_name("line_copier.py")
RECORDS_BUFFER = 1024
"""Bytes of records the flow gathers before the copier gets them (about 60 lines): each write to
its pipe wakes it on the other core, which cost about 80 us a line when each record went alone."""


class FilePlace(NamedTuple):
    """Where a line's bytes start in a local file."""

    path: str
    offset: int


class LineWriter:
    """Lines to ``out`` (an ``atomic_writer``), each followed by a newline; all of them written once it closes.

    ``write(line, place)``: ``line`` is the line's bytes (or a view of them), ``place`` where the
    same bytes lie in a local file, when they do. A local ``out`` gets every line through the
    copier, in order (its buffer flushed once, first, and never written by the flow again): a
    line with a place as its place, one without as its bytes. Any other ``out`` is written
    here. Leaving the block waits for the copier and raises its failure; leaving it on an
    error stops the copier, and the ``atomic_writer`` discards the file.
    """

    def __init__(self, out: Writer) -> None:
        self._out = out
        fd = _local_fd(out)
        self._copier = None if fd is None else _start_copier(fd)
        self._path: str | None = None  # the source the copier has open

    def write(self, line: bytes | memoryview, place: FilePlace | None) -> None:
        if self._copier is None:
            self._out.write(line)
            self._out.write(b"\n")
            return
        if place is None:
            self._send(b"B" + BYTES.pack(len(line)), line)
            return
        if place.path != self._path:
            path = os.fsencode(place.path)
            self._send(b"P" + PATH.pack(len(path)) + path)
            self._path = place.path
        self._send(b"C" + COPY.pack(place.offset, len(line)))

    def _send(self, *records: bytes | memoryview) -> None:
        assert self._copier is not None
        assert self._copier.stdin is not None
        try:
            for record in records:
                self._copier.stdin.write(record)
        except BrokenPipeError:  # the copier has stopped: its reason, not the pipe's
            self._wait()

    def _wait(self) -> None:
        """Close the copier's input, wait for it, and raise its failure."""
        assert self._copier is not None
        copier = self._copier
        _, errors = copier.communicate()  # closes its input first
        if copier.returncode != 0:
            reason = errors.decode(errors="replace").strip() or f"exit status {copier.returncode}"
            raise OSError(f"copying lines into {getattr(self._out, 'name', 'the output')}: {reason}")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        if self._copier is None:
            return
        if kind is not None:  # the file is discarded: stop copying into it
            self._copier.kill()
            self._copier.communicate()
            return
        self._wait()


def _start_copier(fd: int) -> subprocess.Popen[bytes]:
    """The copier, writing to ``fd`` from its current position (the descriptor is shared)."""
    return subprocess.Popen(
        [sys.executable, "-I", "-S", str(COPIER), str(fd)],
        stdin=subprocess.PIPE,
        bufsize=RECORDS_BUFFER,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        pass_fds=(fd,),
    )


def _local_fd(out: Writer) -> int | None:
    """The descriptor of a local ``atomic_writer``'s file, its buffer flushed; None for any other writer."""
    if not isinstance(out, io.BufferedWriter):
        return None
    out.flush()
    return out.fileno()
