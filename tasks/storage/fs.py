"""fsspec-backed locations: one URL (plus storage options) that knows how to read and write itself.

A ``Location`` is a small picklable value (URL + options), so it crosses thread, process and
Dask boundaries; its filesystem and path are resolved lazily, once (fsspec's instance cache
gives the filesystem; a child takes both from its parent), and never pickled.
Every call goes through ``call_with_retries``: transient failures are retried with backoff,
everything else is raised as a ``StorageError``.
"""

from __future__ import annotations

import contextlib
import functools
import mmap
import os
import posixpath
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from tasks.storage import retry  # the module, not its names: importing tasks.storage.retry first imports this package
from tasks.storage.listing import FileEntry, file_found, folder_found, list_folder, version_of
from tasks.storage.options import check_options
from tasks.storage.writes import Writer, atomic_writer, content_type, create_local

READ_BLOCK = 8 * 2**20
_MADV_PAGEOUT = getattr(mmap, "MADV_PAGEOUT", 21 if sys.platform == "linux" else None)  # Linux 5.4; Python 3.11 lacks the name


def _named(part: str) -> bool:
    """Whether ``part`` is names separated by '/' (no empty name, no '.' or '..'), which a path joins as they are."""
    return all(name not in ("", ".", "..") for name in part.split("/"))


def release_view(view: bytes | memoryview) -> None:
    """Let the kernel drop the clean pages of a local file's map from ``Location.read_view``; bytes need nothing.

    The reduce reads each segment once and then writes about as many bytes of outputs, so the
    outputs can take over the pages of the segments it is past. On the 2-core VMs we measure on,
    writing into memory the guest has not used lately costs several times more than reusing
    pages it just freed: a 10,000-rollout reduce took about 19 s with the pages kept and 8-10 s
    with them dropped. Current kernels reclaim only the clean pages for ``MADV_PAGEOUT`` and
    leave dirty ones alone (only kswapd writes file pages back), so the segments of a short
    run, still dirty and removed once the run is published, are not written to disk for this;
    the file is unchanged either way.
    """
    if isinstance(view, memoryview) and isinstance(view.obj, mmap.mmap) and _MADV_PAGEOUT is not None:
        with contextlib.suppress(OSError):  # a kernel without MADV_PAGEOUT
            view.obj.madvise(_MADV_PAGEOUT)


@dataclass(frozen=True)
class Location:
    """A file or folder URL on any fsspec filesystem (local path, file://, s3://, memory://)."""

    url: str
    options: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        return self._fs_path[0]

    @property
    def path(self) -> str:
        return self._fs_path[1]

    @functools.cached_property
    def _fs_path(self) -> tuple[fsspec.AbstractFileSystem, str]:
        """The filesystem and path of the URL, parsed once per location (a reduce asks a file's
        location for them several times per file it writes: parsing was 5 % of a 10,000-rollout
        reduce). Frozen fields never change, so neither does this; ``child`` may set it."""
        resolved: tuple[fsspec.AbstractFileSystem, str] = fsspec.core.url_to_fs(self.url, **self.options)
        if self.options:
            check_options(resolved[0], self.url, self.options)
        return resolved

    def __getstate__(self) -> dict[str, Any]:
        """The fields alone: a location sent to another process resolves its URL there."""
        return {"url": self.url, "options": self.options}

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, LocalFileSystem)

    @property
    def display(self) -> str:
        """How a path is shown to people and written into reports: a plain path when local."""
        return self.path if self.is_local else self.url

    @property
    def name(self) -> str:
        return self.url.rstrip("/").rsplit("/", 1)[-1]

    def child(self, *parts: str) -> Location:
        """The location ``parts`` below this one (joined with '/').

        Below a location whose URL is parsed already, the child's filesystem and path are this
        one's with ``parts`` joined on (what parsing its URL gives when every part names a
        file or folder): a reduce makes a location per file it writes.
        """
        base = self.url if self.url.endswith("://") else self.url.rstrip("/")  # a bare store root keeps its "://"
        child = Location("/".join([base, *parts]), self.options)
        resolved = self.__dict__.get("_fs_path")
        if resolved is not None and all(_named(part) for part in parts):
            fs, path = resolved
            child.__dict__["_fs_path"] = (fs, "/".join([path.rstrip("/"), *parts]))
        return child

    def parent(self) -> Location:
        """The folder holding this location."""
        return Location(self.url.rstrip("/").rsplit("/", 1)[0], self.options)

    def within(self, folder: Location) -> bool:
        """Whether this location is ``folder`` or below it, on the same filesystem.

        Both are compared normalised (``.`` and ``..``, repeated and trailing slashes; symlinks
        resolved locally), so no spelling of an output hides that it lands among the inputs.
        """
        (mine, path), (theirs, root) = self._normalised(), folder._normalised()
        return mine == theirs and (path == root or path.startswith(root.rstrip("/") + "/"))

    def _normalised(self) -> tuple[str, str]:
        fs, path = self._fs_path
        if isinstance(fs, LocalFileSystem):
            return "file", os.path.realpath(path)
        protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        return protocol, posixpath.normpath("/" + path.lstrip("/"))

    def exists(self) -> bool:
        return retry.call_with_retries(self.url, lambda: self.fs.exists(self.path))

    def is_dir(self) -> bool:
        """Whether this is a folder (on S3: a prefix holding an object; one small LIST, not s3fs's whole listing)."""
        return retry.call_with_retries(self.url, lambda: folder_found(self.fs, self.path))

    def modified(self) -> datetime:
        """When the file was last written, in UTC (for a file written once: when it was made)."""

        def when() -> datetime:
            moment: datetime = self.fs.modified(self.path)
            return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)

        return retry.call_with_retries(self.url, when)

    def is_file(self) -> bool:
        """Whether a file is here (on S3 one HEAD: s3fs's ``exists`` adds a LIST when there is none)."""
        return retry.call_with_retries(self.url, lambda: file_found(self.fs, self.path))

    def read_bytes(self) -> bytes:
        """The whole object: one GET on S3 (s3fs would first HEAD it to split a large read)."""
        fs, path = self._fs_path
        options = {"max_concurrency": 1} if "s3" in fs.protocol else {}
        return retry.call_with_retries(self.url, lambda: fs.cat_file(path, **options))

    def read_view(self) -> bytes | memoryview:
        """The whole object, to be sliced: locally a read-only memory map, elsewhere its bytes (one GET).

        A slice of the map is a view of the page cache, so a long row read from a segment is
        written on without being copied through Python (a third of the reduce's time went to
        that copy). Only for files that are never changed in place once written: a file
        truncated under a map faults its reader.
        """
        if not self.is_local:
            return self.read_bytes()

        def mapped() -> bytes | memoryview:
            with open(self.path, "rb") as f:
                if os.fstat(f.fileno()).st_size == 0:
                    return b""
                return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))

        return retry.call_with_retries(self.url, mapped)

    def read_range(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)``: one ranged GET on object stores."""
        return retry.call_with_retries(self.url, lambda: self.fs.cat_file(self.path, start=start, end=end))

    def entry(self) -> FileEntry:
        info = retry.call_with_retries(self.url, lambda: self.fs.info(self.path))
        return FileEntry(self.name, int(info.get("size") or 0), version_of(info))

    def list_files(self, *, folders: bool = False) -> list[FileEntry]:
        """Files directly in this folder, sorted by name (one LIST; no recursion); with
        ``folders``, the folders in it too (``FileEntry.folder``; on S3 the common prefixes).

        Entries are made as the listing streams (a directory scan locally, page by page on S3),
        so a folder of 20,000 captures costs one small entry each, never the whole listing as
        the filesystem's info dicts.
        """
        return retry.call_with_retries(self.url, lambda: list_folder(*self._fs_path, folders))

    def glob(self) -> list[Location]:
        """The files matching this location read as a glob pattern, sorted by URL (one LIST)."""
        fs, path = self._fs_path
        found = retry.call_with_retries(self.url, lambda: fs.glob(path, detail=True))
        files = sorted(p for p, info in found.items() if info.get("type") == "file")
        return [Location(self._url_of(fs, p), self.options) for p in files]

    def _url_of(self, fs: fsspec.AbstractFileSystem, path: str) -> str:
        """A path the filesystem returned, as a URL in the form this location was written."""
        if "://" not in self.url:
            return path
        scheme = self.url.split("://", 1)[0]
        return f"{scheme}://{path}" if isinstance(fs, LocalFileSystem) else f"{scheme}://{path.lstrip('/')}"

    def list_tree(self) -> list[str]:
        """Every file path below this folder, relative to it, sorted."""
        root = self.path.rstrip("/")
        found = retry.call_with_retries(self.url, lambda: self.fs.find(root))
        return sorted(p[len(root) + 1 :] for p in found if p.startswith(root + "/"))

    def iter_lines(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int, bytes]]:
        """Stream ``(line_no, offset, line)`` with 1-based numbers; ``line`` keeps no newline.

        Lines split on ``\\n`` only, as Gym's JSONL readers do. Streaming keeps memory at one block.
        Each block read is retried on its own: a buffered file reads a failed range again.

        With ``start`` or ``end``, only the lines whose first byte lies in ``[start, end)``, numbered
        from 1 within that span: spans cut anywhere in a file share its lines out exactly once.
        """
        with retry.call_with_retries(self.url, lambda: self.fs.open(self.path, "rb", block_size=READ_BLOCK)) as f:
            position = max(start - 1, 0)  # file offset of the block's first byte
            if position:
                f.seek(position)
            to_line_start = start > 0  # drop what precedes the first line starting at or after ``start``
            line_no = 0
            pending = b""  # the unterminated end of the blocks before (usually part of one row)
            while block := retry.call_with_retries(self.url, lambda: f.read(READ_BLOCK)):
                begin = 0
                if to_line_start:
                    cut = block.find(b"\n")
                    if cut < 0:
                        position += len(block)
                        continue
                    begin, to_line_start = cut + 1, False
                if pending:  # joined with the head of this block alone: no block-sized copies
                    cut = block.find(b"\n")
                    if cut < 0:
                        pending += block
                        position += len(block)
                        continue
                    line_no += 1
                    yield line_no, position - len(pending), pending + block[:cut]
                    begin = cut + 1
                while (cut := block.find(b"\n", begin)) >= 0:
                    if end is not None and position + begin >= end:
                        return
                    line_no += 1
                    yield line_no, position + begin, block[begin:cut]
                    begin = cut + 1
                if end is not None and position + begin >= end:
                    return
                pending = block[begin:]
                position += len(block)
            if pending:
                yield line_no + 1, position - len(pending), pending

    def write_bytes(self, data: bytes) -> None:
        """Write the whole object atomically (temp + rename locally, one PUT on object stores)."""
        self.write_chunks(lambda: (data,))

    def writer(self) -> contextlib.AbstractContextManager[Writer]:
        """A writer whose bytes appear here, whole, only if its block succeeds (``atomic_writer``)."""
        return atomic_writer(self)

    def write_chunks(self, chunks: Callable[[], Iterable[bytes | memoryview]]) -> None:
        """Write the object atomically from ``chunks()``, called again for each retry of a failed write."""

        def put() -> None:
            with atomic_writer(self) as f:
                for chunk in chunks():
                    f.write(chunk)

        retry.call_with_retries(self.url, put)

    def write_new(self, data: bytes) -> bool:
        """Create the object only if it does not exist yet; False when it already exists.

        On object stores a create whose response was lost (reset, timeout) may have succeeded:
        when a retry then finds the object holding exactly our bytes, the create was ours.
        """
        tried = False

        def create() -> bool:
            nonlocal tried
            if self.is_local:
                return create_local(self.path, data)
            if file_found(self.fs, self.path):
                return tried and self.fs.cat_file(self.path) == data
            tried = True
            try:
                with self.fs.open(self.path, "xb", ContentType=content_type(self.path)) as f:
                    f.write(data)
            except FileExistsError:
                return False
            return True

        return retry.call_with_retries(self.url, create)

    def remove(self) -> None:
        retry.call_with_retries(self.url, lambda: self.fs.rm_file(self.path))

    def remove_tree(self) -> None:
        """Remove this folder and everything below it (nothing to do when it does not exist)."""
        if self.is_dir():
            retry.call_with_retries(self.url, lambda: self.fs.rm(self.path, recursive=True))
