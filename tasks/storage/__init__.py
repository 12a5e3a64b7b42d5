"""The storage layer: fsspec URLs, listing, streaming reads, atomic writes, error mapping."""

from tasks.storage.base import (
    InputNotFound,
    PermanentStorageError,
    StorageError,
    TransientStorageError,
)
from tasks.storage.fs import Location, release_view
from tasks.storage.listing import FileEntry
from tasks.storage.writes import atomic_writer

__all__ = [
    "FileEntry",
    "InputNotFound",
    "Location",
    "PermanentStorageError",
    "StorageError",
    "TransientStorageError",
    "atomic_writer",
    "release_view",
]
