"""Asking a store what it allows before relying on it: a link a browser can open, and whether a folder can be written.

Kept apart from ``fs`` (what a ``Location`` does) because these are questions asked once per run
by the flow and publishing, with answers that need a store-specific setting (SigV4 signing) or
a probe write.
"""

from __future__ import annotations

import os

import fsspec

from tasks.storage.base import PermanentStorageError, StorageError
from tasks.storage.fs import Location
from tasks.storage.writes import TEMP_PREFIX, temp_file


def signed_url(location: Location, seconds: int) -> str:
    """A URL a browser can GET for ``seconds`` (S3: presigned with SigV4).

    s3fs signs with botocore's default, which for S3 presigning is still SigV2 in places
    (moto, the us-east-1 global endpoint): a SigV4 link is asked for explicitly.

    Raises:
        NotImplementedError: the store cannot sign (``memory://``, a local file).
    """
    fs = location.fs
    if "s3" in fs.protocol:
        config = {**location.options.get("config_kwargs", {}), "signature_version": "s3v4"}
        fs = fsspec.filesystem("s3", **{**location.options, "config_kwargs": config})
    return str(fs.sign(location.path, expiration=seconds))  # computed here: no request to retry


def check_writable(location: Location) -> None:
    """Raise ``PermanentStorageError`` when nothing can be written in this folder, before anything is.

    Locally a temp file is created and removed in the nearest folder that exists (no folder
    is made); on object stores an empty probe object is written and removed. A read-only
    folder, a missing bucket or credentials that cannot write are then one line before a
    run starts, not a failed flow run after its run directory was claimed.
    """
    if location.is_local:
        folder = location.path
        while not os.path.lexists(folder) and os.path.dirname(folder) != folder:
            folder = os.path.dirname(folder)
        if not os.path.isdir(folder):
            raise PermanentStorageError(location.display, f"cannot be written: {folder} is not a folder")
        try:
            fd, tmp = temp_file(folder)
        except OSError as exc:
            raise PermanentStorageError(location.display, f"cannot be written: {exc.strerror or exc} ({folder})") from exc
        os.close(fd)
        os.unlink(tmp)
        return
    probe = location.child(f"{TEMP_PREFIX}write-probe-{os.urandom(4).hex()}")
    try:
        probe.write_bytes(b"")
        probe.remove()
    except StorageError as exc:
        raise PermanentStorageError(location.url, f"cannot be written: {exc.message}") from exc
