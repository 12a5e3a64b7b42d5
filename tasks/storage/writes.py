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
from types import MappingProxyType
from typing import Any, Protocol

from fsspec.implementations.local import LocalFileSystem

from tasks.storage import retry  # the module, not its names: importing tasks.storage.retry first imports this package
from tasks.storage.base import classify
from tasks.storage.concurrent import WriteBehind


class Target(Protocol):
    """What a write needs of its destination (``tasks.storage.fs.Location`` is one): this module
    sits below ``fs``, which writes through it."""

    @property
    def url(self) -> str: ...

    @property
    def path(self) -> str: ...

    @property
    def fs(self) -> Any: ...


CONTENT_TYPES = MappingProxyType(
    {
        ".html": "text/html; charset=utf-8",
        ".js": "text/javascript; charset=utf-8",
        ".json": "application/json",
        ".jsonl": "application/x-ndjson",
        ".md": "text/markdown; charset=utf-8",
        ".parquet": "application/vnd.apache.parquet",
        ".txt": "text/plain; charset=utf-8",
    }
)
"""The content type an object store is told for each output, by file extension; a name without
one (``LATEST``, ``_SUCCESS``) is plain text, anything else bytes. Without it S3 stored every
object as ``binary/octet-stream`` and a browser downloaded ``report.html`` instead of showing it
(and the viewer's ``rollouts-NNNNN.js``, which it loads as a script, as ``application/octet-stream``)."""
assert list(CONTENT_TYPES) == sorted(CONTENT_TYPES)


def content_type(path: str) -> str:
    """The content type of the object at ``path`` (:data:`CONTENT_TYPES`)."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    _, dot, extension = name.lstrip(".").rpartition(".")
    if not dot:
        return "text/plain; charset=utf-8"
    return CONTENT_TYPES.get(f".{extension.lower()}", "application/octet-stream")


TEMP_PREFIX = ".tmp-"
"""Local atomic writes stage their bytes in ``<folder>/.tmp-*`` files; a crash can leave some."""

PART_BYTES = 16 * 2**20
"""An S3 upload longer than this goes in parts of this size (S3's minimum part is 5 MiB)."""
PARTS_IN_FLIGHT = 4
"""Parts uploaded behind the writer at once: the writer's memory stays within this many parts plus one."""


def temp_file(folder: str) -> tuple[int, str]:
    """A new temp file in ``folder`` (created if missing): its descriptor and path.

    Created with mode 0666 so the umask gives it, and the output renamed from it, the usual
    permissions (``tempfile.mkstemp`` makes files 0600: outputs only their owner could read).
    A folder that refuses the file is named in the error, not the temp file's made-up name.
    """
    os.makedirs(folder, exist_ok=True)
    while True:
        tmp = os.path.join(folder, f"{TEMP_PREFIX}{secrets.token_hex(8)}.part")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue
        except OSError as exc:
            raise type(exc)(exc.errno, exc.strerror, folder) from exc


def create_local(path: str, data: bytes) -> bool:
    """O_EXCL create; the bytes go through a temp file so a crash never leaves a half file."""
    fd, tmp = temp_file(os.path.dirname(path))
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

    def write(self, data: bytes | memoryview, /) -> int: ...


class _ClassifiedWriter:
    """An object-store upload whose write errors (a part upload failing) are StorageErrors."""

    def __init__(self, url: str, upload: Any) -> None:  # fsspec's AbstractBufferedFile (untyped)
        self._url = url
        self._upload = upload

    def write(self, data: bytes | memoryview) -> int:
        try:
            return self._upload.write(data)
        except Exception as exc:  # any failure: mapped onto the storage tree
            raise classify(self._url, exc) from exc

    def finish(self) -> None:
        """Upload the buffered tail as the last part once a multipart upload has begun."""
        if self._upload.offset is None:
            return  # nothing sent yet: the commit is one PUT of the buffer
        try:
            self._upload.flush(force=True)
        except Exception as exc:  # any failure: mapped onto the storage tree
            raise classify(self._url, exc) from exc


class _S3Upload:
    """An S3 object written in parts uploaded behind the writer, visible only once committed.

    A write over ``PART_BYTES`` starts a multipart upload and hands each full part to ``behind``
    (background threads), so producing the next bytes (the reduce's pass) overlaps with sending
    the last ones; s3fs's own writer uploads each part inline and waits for it. A shorter object
    is one PUT at the commit. Each request retries itself.
    """

    def __init__(self, location: Target, behind: WriteBehind) -> None:
        self._location = location
        self._bucket, self._key, _ = location.fs.split_path(location.path)
        self._behind = behind
        self._buffer = bytearray()
        self._upload_id: str | None = None
        self._parts_sent = 0
        self._etags: dict[int, str] = {}  # part number -> ETag, as each upload returns

    def _call(self, method: str, **kwargs: Any) -> dict[str, Any]:
        fs = self._location.fs
        return retry.call_with_retries(self._location.url, lambda: fs.call_s3(method, Bucket=self._bucket, Key=self._key, **kwargs))

    def write(self, data: bytes | memoryview) -> int:
        self._buffer += data
        while len(self._buffer) >= PART_BYTES:
            self._send(bytes(memoryview(self._buffer)[:PART_BYTES]))
            del self._buffer[:PART_BYTES]
        return len(data)

    def _send(self, body: bytes) -> None:
        if self._upload_id is None:
            self._upload_id = self._call("create_multipart_upload", ContentType=content_type(self._key))["UploadId"]
        self._parts_sent += 1
        number = self._parts_sent

        def upload() -> None:
            self._etags[number] = self._call("upload_part", PartNumber=number, UploadId=self._upload_id, Body=body)["ETag"]

        self._behind.submit(upload, len(body))

    def finish(self) -> None:
        """Send the tail as the last part once a multipart upload has begun."""
        if self._upload_id is not None and self._buffer:
            self._send(bytes(self._buffer))
            self._buffer = bytearray()

    def commit(self) -> None:
        """Make the object visible: complete the upload (every part stored), else one PUT."""
        if self._upload_id is None:
            self._call("put_object", Body=bytes(self._buffer), ContentType=content_type(self._key))
        else:
            parts = [{"PartNumber": n, "ETag": etag} for n, etag in sorted(self._etags.items())]
            self._call("complete_multipart_upload", UploadId=self._upload_id, MultipartUpload={"Parts": parts})
        self._location.fs.invalidate_cache(self._location.path)

    def abort(self) -> None:
        """Drop the parts stored so far (best effort: S3's lifecycle rules catch what a failure leaves)."""
        if self._upload_id is not None:
            with contextlib.suppress(Exception):
                self._call("abort_multipart_upload", UploadId=self._upload_id)


@contextlib.contextmanager
def atomic_writer(location: Target) -> Iterator[Writer]:
    """A binary writer whose content appears at ``location`` only if the block succeeds.

    Locally: a temp file in the same folder, then ``os.replace``. On S3: ``_S3Upload``, committed
    on success and aborted on error; a failed part raises a ``StorageError`` so the task-level
    retry can redo the write. On other object stores: fsspec's upload with ``autocommit=False``
    (an exception inside a plain ``fs.open(..., "wb")`` would publish the partial object); once
    its multipart upload has begun, the buffered tail must be flushed as the last part before
    the commit, or the object would silently lose it. The in-memory filesystem (tests) gets the
    whole buffer in one ``pipe``.
    """
    fs, path = location.fs, location.path
    if isinstance(fs, LocalFileSystem):
        fd, tmp = temp_file(os.path.dirname(path))
        try:
            with os.fdopen(fd, "wb") as f:
                yield f
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
    elif "memory" in fs.protocol:
        buffer = io.BytesIO()
        yield buffer
        fs.pipe_file(path, buffer.getvalue())
    elif "s3" in fs.protocol:
        upload = None
        try:
            with WriteBehind(window=PARTS_IN_FLIGHT, budget=PARTS_IN_FLIGHT * PART_BYTES) as behind:
                upload = _S3Upload(location, behind)
                yield upload
                upload.finish()
            upload.commit()  # leaving the block above waited for every part and raised a failed one
        except BaseException:
            if upload is not None:
                upload.abort()
            raise
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
