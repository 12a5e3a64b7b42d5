"""What a folder holds, as ``FileEntry`` values: a local directory scan, S3's page iterator,
and one-request checks for a file or a folder on S3 (what ``Location`` lists and checks with).
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from typing import Any

import fsspec
import fsspec.asyn
from fsspec.implementations.local import LocalFileSystem

__all__ = ["FileEntry", "entry_of", "file_found", "folder_found", "list_folder", "version_of"]

_UNRESOLVED = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})
"""The ``stat`` errors ``Path.exists()`` takes for "not there"."""


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One listed file (or folder): its name relative to the listed folder, size and version tag."""

    name: str
    size: int
    version: str
    folder: bool = False
    """Not a regular file: a folder, or anything else found under the name locally (a FIFO, a
    socket); listed only by ``Location.list_files(folders=True)``."""


def list_folder(fs: fsspec.AbstractFileSystem, path: str, folders: bool) -> list[FileEntry]:
    """The folder's files (and, with ``folders``, what else it holds), sorted by name: a local
    directory scan, S3's page iterator, else the filesystem's own listing, uncached."""
    if isinstance(fs, LocalFileSystem):
        files = local_files(path, folders)
    elif "s3" in fs.protocol:
        files = s3_files(fs, path, folders)
    else:
        fs.invalidate_cache(path)
        files = [entry_of(info) for info in fs.ls(path, detail=True) if listed(info, folders)]
    files.sort(key=entry_name)
    return files


def entry_of(info: dict[str, Any]) -> FileEntry:
    folder = info.get("type") == "directory"
    return FileEntry(info["name"].rstrip("/").rsplit("/", 1)[-1], int(info.get("size") or 0), version_of(info), folder)


def listed(info: dict[str, Any], folders: bool) -> bool:
    return info.get("type") == "file" or (folders and info.get("type") == "directory")


def local_files(path: str, folders: bool) -> list[FileEntry]:
    """A directory scan: what ``entry_of`` makes of fsspec's local infos (version: the mtime).

    A file renamed or deleted between the scan and its ``stat`` is left out, as if it had gone
    first: the reduce lists a segment folder while workers rename new segments into it. So is
    a name that does not resolve (a dangling or looping symlink): Python's ``Path.exists()``,
    which 0.7.0 asks of a capture file or marker, says False for it. With ``folders``, anything
    else that exists and is not a regular file is listed as ``folder``.
    """
    entries = []
    with os.scandir(path) as found:
        for entry in found:
            try:
                if entry.is_file():
                    status = entry.stat()
                    entries.append(FileEntry(entry.name, status.st_size, str(status.st_mtime)))
                elif folders:
                    entries.append(FileEntry(entry.name, 0, str(entry.stat().st_mtime), folder=True))
            except OSError as exc:
                if exc.errno not in _UNRESOLVED:
                    raise
    return entries


def folder_found(fs: fsspec.AbstractFileSystem, path: str) -> bool:
    if "s3" not in fs.protocol:
        return fs.isdir(path)
    bucket, key, _ = fs.split_path(path)
    prefix = f"{key.rstrip('/')}/" if key else ""
    return bool(fs.call_s3("list_objects_v2", Bucket=bucket, Prefix=prefix, MaxKeys=1).get("KeyCount"))


def file_found(fs: fsspec.AbstractFileSystem, path: str) -> bool:
    if "s3" not in fs.protocol:
        return fs.isfile(path)
    bucket, key, _ = fs.split_path(path)
    if not key:
        return False
    try:
        fs.call_s3("head_object", Bucket=bucket, Key=key)
    except FileNotFoundError:
        return False
    return True


def s3_files(fs: fsspec.AbstractFileSystem, path: str, folders: bool) -> list[FileEntry]:
    """s3fs's own page iterator (the one its ``ls`` uses), one page of infos in memory at a time."""
    from botocore.exceptions import ClientError  # s3fs's stack, imported only when S3 is used
    from s3fs.errors import translate_boto_error

    bucket, key, _ = fs.split_path(path)

    async def pages() -> list[FileEntry]:
        infos = fs._iterdir(bucket, prefix=f"{key.rstrip('/')}/" if key else "")  # noqa: SLF001  # s3fs's only page-by-page listing
        try:
            return [entry_of(info) async for info in infos if listed(info, folders)]
        except ClientError as exc:  # reported as s3fs's ls reports it: OSError, FileNotFoundError, ...
            raise translate_boto_error(exc) from exc

    return fsspec.asyn.sync(fs.loop, pages)


def entry_name(entry: FileEntry) -> str:
    return entry.name


def version_of(info: dict[str, Any]) -> str:
    """ETag on object stores, else the modification time: what changes when the bytes change."""
    for key in ("ETag", "etag", "mtime", "LastModified", "created"):
        value = info.get(key)
        if value is not None:
            return str(value).strip('"')
    return ""
