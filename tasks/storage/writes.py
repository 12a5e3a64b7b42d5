"""Atomic writes: an object appears whole or not at all, locally and on object stores.

Locally the bytes go to a temp file in the target's folder, then ``os.replace``; on object
stores to an upload that is committed only on success. Part of ``tasks.storage``: callers use
``Location.write_bytes`` / ``write_chunks`` / ``write_new`` or ``atomic_writer``.
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Protocol

from fsspec.implementations.local import LocalFileSystem

from tasks import retry  # the module, not its names: importing tasks.retry first imports this package
from tasks.storage.base import classify

if TYPE_CHECKING:
    from tasks.storage.fs import Location

TEMP_PREFIX = ".tmp-"
"""Local atomic writes stage their bytes in ``<folder>/.tmp-*`` files; a crash can leave some."""


def _temp_file(folder: str) -> tuple[int, str]:
    """A new temp file in ``folder`` (created if missing): its descriptor and path.

    Created with mode 0666 so the umask gives it, and the output renamed from it, the usual
    permissions (``tempfile.mkstemp`` makes files 0600: outputs only their owner could read).
    """
    os.makedirs(folder, exist_ok=True)
    while True:
        tmp = os.path.join(folder, f"{TEMP_PREFIX}{secrets.token_hex(8)}.part")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


def create_local(path: str, data: bytes) -> bool:
    """O_EXCL create; the bytes go through a temp file so a crash never leaves a half file."""
    fd, tmp = _temp_file(os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)
    return True


class Writer(Protocol):
    """What ``atomic_writer`` yields: something bytes can be written to."""

    def write(self, data: bytes) -> int: ...


class _ClassifiedWriter:
    """An object-store upload whose write errors (a part upload failing) are StorageErrors."""

    def __init__(self, url: str, upload: IO[bytes]) -> None:
        self._url = url
        self._upload = upload

    def write(self, data: bytes) -> int:
        try:
            return self._upload.write(data)
        except Exception as exc:  # noqa: BLE001 - mapped onto the storage tree
            raise classify(self._url, exc) from exc

    def finish(self) -> None:
        """Upload the buffered tail as the last part once a multipart upload has begun."""
        if self._upload.offset is None:
            return  # nothing sent yet: the commit is one PUT of the buffer
        try:
            self._upload.flush(force=True)
        except Exception as exc:  # noqa: BLE001 - mapped onto the storage tree
            raise classify(self._url, exc) from exc


@contextlib.contextmanager
def atomic_writer(location: Location) -> Iterator[Writer]:
    """A binary writer whose content appears at ``location`` only if the block succeeds.

    Locally: a temp file in the same folder, then ``os.replace``. On object stores: an upload
    with ``autocommit=False`` that is committed on success and discarded on error (an exception
    inside a plain ``fs.open(..., "wb")`` would publish the partial object). Once a multipart
    upload has begun (output over one block), the buffered tail must be flushed as the last
    part before the commit, or the object would silently lose it. The commit is retried;
    a failed part upload raises a ``StorageError`` so the task-level retry can redo the write.
    The in-memory filesystem (tests) gets the whole buffer in one ``pipe``.
    """
    fs, path = location.fs, location.path
    if isinstance(fs, LocalFileSystem):
        fd, tmp = _temp_file(os.path.dirname(path))
        try:
            with os.fdopen(fd, "wb") as f:
                yield f
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
    elif fs.protocol in ("memory",) or "memory" in fs.protocol:
        buffer = io.BytesIO()
        yield buffer
        fs.pipe_file(path, buffer.getvalue())
    else:
        upload = retry.call_with_retries(location.url, lambda: fs.open(path, "wb", autocommit=False))
        writer = _ClassifiedWriter(location.url, upload)
        try:
            yield writer
            writer.finish()
            retry.call_with_retries(location.url, upload.commit)
        except BaseException:
            upload.discard()
            raise
        finally:
            upload.closed = True  # committed or discarded: close() must not flush again
