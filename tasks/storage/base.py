"""Storage exceptions and the rule that sorts any I/O failure into transient or permanent.

Hierarchy::

    StorageError                  any failure talking to storage
    ├── TransientStorageError     worth retrying: 5xx, SlowDown, resets, timeouts
    └── PermanentStorageError     retrying cannot help: missing, forbidden, malformed URL
        └── InputNotFound         a required input does not exist (almost always a typo)

Content problems (bad JSON, invalid ids) are never storage errors: they are evidence.
"""

from __future__ import annotations

_TRANSIENT_MARKERS = (
    "slowdown",
    "slow down",
    "internalerror",
    "internal error",
    "service unavailable",
    "serviceunavailable",
    "503",
    "500",
    "502",
    "504",
    "connection reset",
    "connection aborted",
    "connection refused",
    "timed out",
    "timeout",
    "temporarily",
    "throttl",
    "requesttimeout",
    "server disconnected",
    "serverdisconnected",
    "could not connect",
    "connection closed",
    "connectionclosed",
    "incompleteread",
    "payloaderror",
    "responsestreamingerror",
)


class StorageError(Exception):
    """Any failure talking to storage; ``url`` names the object involved."""

    def __init__(self, url: str, message: str) -> None:
        super().__init__(f"{url}: {message}")
        self.url = url
        self.message = message

    def __reduce__(self) -> tuple[type[StorageError], tuple[str, str]]:
        return (type(self), (self.url, self.message))


class TransientStorageError(StorageError):
    """A failure that may succeed when tried again (throttling, 5xx, resets, timeouts)."""


class PermanentStorageError(StorageError):
    """A failure that retrying cannot fix (missing object, no permission, bad URL)."""


class InputNotFound(PermanentStorageError):
    """A required input (rollouts file, capture directory) does not exist."""


def classify(url: str, exc: BaseException) -> StorageError:
    """Map a raw exception from fsspec/s3fs/botocore onto our tree.

    Missing files and permission problems are permanent; network-shaped failures and throttling
    are transient, also when the SDK wrapped them (botocore's ``EndpointConnectionError`` keeps
    the reset it wraps as its cause). An unrecognised ``OSError`` counts as transient: the retry
    budget is small, so a truly permanent one still surfaces quickly.
    """
    if isinstance(exc, StorageError):
        return exc
    if isinstance(exc, FileNotFoundError):
        return InputNotFound(url, "not found")
    if isinstance(exc, (PermissionError, IsADirectoryError, NotADirectoryError, ValueError)):
        return PermanentStorageError(url, f"{type(exc).__name__}: {exc}")
    if any(isinstance(cause, (TimeoutError, ConnectionError)) for cause in _chain(exc)):
        return TransientStorageError(url, f"{type(exc).__name__}: {exc}")
    text = f"{type(exc).__name__} {exc}".lower()
    if any(marker in text for marker in _TRANSIENT_MARKERS):
        return TransientStorageError(url, f"{type(exc).__name__}: {exc}")
    if isinstance(exc, OSError):
        return TransientStorageError(url, f"{type(exc).__name__}: {exc}")
    return PermanentStorageError(url, f"{type(exc).__name__}: {exc}")


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from or during (cycle-safe)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen
