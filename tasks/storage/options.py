"""Which storage options a store's filesystem takes, so a mistyped one is refused by its name before any request."""

from __future__ import annotations

import functools
import inspect
from typing import Any

from fsspec import AbstractFileSystem

from tasks.storage.base import UnknownStorageOption

FSSPEC_OPTIONS = frozenset({"skip_instance_cache", "use_listings_cache", "listings_expiry_time", "max_paths"})
"""What fsspec itself takes from any filesystem's options (its instance cache and listings cache)."""


@functools.cache
def accepted_options(fs_class: type[AbstractFileSystem]) -> frozenset[str] | None:
    """The option names ``fs_class`` takes; None when it takes any name (a local or memory
    filesystem ignores what it does not use, so one set of options serves every store of a run).

    s3fs hands the options it does not name to aiobotocore's session, which refused an unknown
    one only at the first request, with a ``TypeError`` of its own that named whichever file was
    read first: the session's arguments are S3's options too.
    """
    parameters = inspect.signature(fs_class.__init__).parameters.values()
    named = {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)} - {"self"}
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        protocols = fs_class.protocol if isinstance(fs_class.protocol, tuple) else (fs_class.protocol,)
        if "s3" not in protocols:
            return None
        from aiobotocore.session import AioSession  # type: ignore[import-untyped]  # loaded with s3fs; no stubs

        named |= set(inspect.signature(AioSession.__init__).parameters) - {"self"}
    return frozenset(named | FSSPEC_OPTIONS)


def check_options(fs: AbstractFileSystem, url: str, options: dict[str, Any]) -> None:
    """Raise ``UnknownStorageOption`` naming every option ``fs`` does not take."""
    accepted = accepted_options(fs.__class__)
    unknown = sorted(set(options) - accepted) if accepted is not None else []
    if unknown:
        plural = "s" if len(unknown) > 1 else ""
        raise UnknownStorageOption(url, f"unknown storage option{plural} {', '.join(unknown)} (not an option of {type(fs).__name__})")
