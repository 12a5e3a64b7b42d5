"""Storage exceptions and the rule that sorts any I/O failure into transient or permanent.

Hierarchy::

    StorageError                  any failure talking to storage
    ├── TransientStorageError     worth retrying: 5xx, SlowDown, resets, timeouts
    └── PermanentStorageError     retrying cannot help: missing, forbidden, malformed URL
        ├── UnknownStorageOption  a storage option the store's filesystem does not take
        └── InputNotFound         a required input does not exist (almost always a typo)

Content problems (bad JSON, invalid ids) are never storage errors: they are evidence.
"""

from __future__ import annotations

import errno
import sys

from evidence import StageError

# S3 error codes worth retrying (the rest of 4xx is the request's own fault); any 5xx also is.
_TRANSIENT_CODES = frozenset(
    {"SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout", "Throttling", "ThrottlingException", "RequestLimitExceeded"}
)
_NOT_FOUND_CODES = frozenset({"NoSuchKey", "NoSuchBucket", "NoSuchUpload", "NoSuchVersion", "404"})
_TOO_MANY_REQUESTS = 429
# A connection that failed, reset or timed out, or a reply cut short, as the S3 stack raises them.
_TRANSPORT_ERRORS = (
    ("botocore.exceptions", "HTTPClientError"),
    ("botocore.exceptions", "ConnectionError"),
    ("botocore.exceptions", "IncompleteReadError"),
    ("botocore.parsers", "ResponseParserError"),
    ("aiohttp", "ClientConnectionError"),
    ("aiohttp", "ClientPayloadError"),
    ("urllib3.exceptions", "ProtocolError"),
    ("http.client", "IncompleteRead"),
)
# errno values of failures that pass: interrupted or busy calls, I/O and network trouble (s3fs
# maps SlowDown and 503 to EBUSY, 500 to EREMOTEIO, an error it cannot name to EIO).
_TRANSIENT_ERRNOS = frozenset(
    getattr(errno, name)
    for name in (
        "EAGAIN",
        "EBUSY",
        "EINTR",
        "EIO",
        "EREMOTEIO",
        "ETIMEDOUT",
        "ECONNRESET",
        "ECONNABORTED",
        "ECONNREFUSED",
        "EPIPE",
        "ENETDOWN",
        "ENETUNREACH",
        "ENETRESET",
        "EHOSTDOWN",
        "EHOSTUNREACH",
    )
    if hasattr(errno, name)
)


class StorageError(StageError):
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


class UnknownStorageOption(PermanentStorageError):
    """A storage option the store does not take: the parameter's fault, so the line names the option, not an object."""

    def __str__(self) -> str:
        return self.message


class InputNotFound(PermanentStorageError):
    """A required input (rollouts file, capture directory) does not exist."""


def classify(url: str, exc: BaseException) -> StorageError:
    """Map a raw exception from fsspec/s3fs/botocore/aiohttp onto our tree, by type and status.

    A storage reply anywhere in the chain (``__cause__``/``__context__``) decides first: its S3
    error code and HTTP status (botocore's ``ClientError``, which s3fs keeps as the cause of the
    ``OSError`` it raises) or aiohttp's status. Otherwise the outermost exception that says
    anything decides: SDK and aiohttp connection, timeout and cut-short-reply errors, then the
    ``OSError`` type and ``errno``. Message text is never read (``KeyError('s3://b/job-500/x')``
    is no server error), and what nothing recognises is permanent: retrying it would only delay
    a failure that is not storage weather.
    """
    if isinstance(exc, StorageError):
        return exc
    chain = _chain(exc)
    kind = next((k for k in map(_kind_of_reply, chain) if k is not None), None) or next(
        (k for k in map(_kind_of_error, chain) if k is not None), PermanentStorageError
    )
    return kind(url, _not_found(chain) if kind is InputNotFound else f"{type(exc).__name__}: {exc}")


def _not_found(chain: list[BaseException]) -> str:
    """What is missing: the bucket, when S3 says so (a missing bucket used to read "params.json: not found")."""
    return "no such bucket" if any(_reply_of(e)[0] == "NoSuchBucket" for e in chain) else "not found"


def _kind_of_reply(exc: BaseException) -> type[StorageError] | None:
    """What a storage reply says (None when ``exc`` is not one): S3 error code, HTTP status."""
    code, status = _reply_of(exc)
    if code is None and status is None:
        return None
    if code in _TRANSIENT_CODES or (status is not None and (status >= 500 or status == _TOO_MANY_REQUESTS)):
        return TransientStorageError
    return InputNotFound if code in _NOT_FOUND_CODES or status == 404 else PermanentStorageError


def _reply_of(exc: BaseException) -> tuple[str | None, int | None]:
    """(error code, HTTP status) of botocore's ``ClientError`` or aiohttp's ``ClientResponseError``."""
    if isinstance(exc, _loaded(("botocore.exceptions", "ClientError"))):
        response = getattr(exc, "response", None) or {}
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return response.get("Error", {}).get("Code"), int(status) if status is not None else None
    if isinstance(exc, _loaded(("aiohttp", "ClientResponseError"))):
        return None, getattr(exc, "status", None)
    return None, None


def _kind_of_error(exc: BaseException) -> type[StorageError] | None:
    """What a raised error says by its type and errno (None: nothing; look at its cause)."""
    if isinstance(exc, _loaded(*_TRANSPORT_ERRORS)):
        return TransientStorageError
    if isinstance(exc, FileNotFoundError):
        return InputNotFound
    if isinstance(exc, (PermissionError, FileExistsError, IsADirectoryError, NotADirectoryError)):
        return PermanentStorageError
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return TransientStorageError
    if isinstance(exc, OSError) and exc.errno is not None:
        return TransientStorageError if exc.errno in _TRANSIENT_ERRNOS else PermanentStorageError
    return None


def _loaded(*names: tuple[str, str]) -> tuple[type[BaseException], ...]:
    """The named exception types of the modules already imported: one of a library never loaded
    cannot have been raised, so classifying never imports the S3 stack."""
    return tuple(getattr(module, name) for module_name, name in names if (module := sys.modules.get(module_name)) is not None)


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from or during (cycle-safe)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen
