"""Job ids, run ids and canonical URLs: one definition used by run, batch and the event trigger."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_SAFE_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")

SUPPORTED_SCHEMES = ("file", "memory", "s3", "s3a")
"""The URL schemes a run reads and writes: local files, S3 (s3fs), and memory:// (tests)."""
_WELL_KNOWN_SCHEMES = frozenset(
    {*SUPPORTED_SCHEMES, "abfs", "abfss", "adl", "az", "dbfs", "ftp", "gcs", "gs", "hdfs", "hf", "http", "https", "local", "oss"}
    | {"sftp", "smb", "ssh", "webhdfs"}
)
"""Schemes that, written with one slash or none (``s3:/bucket``), are a mistyped URL, never a local path."""
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


class UnsupportedUrl(ValueError):
    """A URL whose scheme the stage does not read or write, or a mistyped one (``s3:/bucket``)."""


def check_url(url: str) -> str:
    """Return ``url`` when its scheme is supported (or it is a local path); raise ``UnsupportedUrl`` otherwise.

    Without this a mistyped ``s3:/evals/x`` was a local folder named ``s3:`` (a run wrote there
    and said nothing), and ``ftp://`` or ``htps://`` failed later with a resolver's message.
    """
    scheme, sep, _ = url.partition("://")
    supported = ", ".join(f"{s}://" for s in SUPPORTED_SCHEMES)
    if sep:
        if scheme not in SUPPORTED_SCHEMES:
            raise UnsupportedUrl(f"unsupported URL scheme {scheme!r} in {url!r} (supported: a local path, {supported})")
        return url
    written = _SCHEME.match(url)
    if written and written.group(1).lower() in _WELL_KNOWN_SCHEMES:
        name, rest = written.group(1), url[written.end() :]
        raise UnsupportedUrl(f"malformed URL {url!r}: scheme {name!r} needs '://' ({_meant(name, rest)})")
    return url


def _meant(scheme: str, rest: str) -> str:
    """The URL a one-slash ``scheme:rest`` meant: a file URL's path keeps its root (``file:///data/x``,
    not ``file://data/x``, whose ``data`` is a host), and a relative one is the path alone."""
    if scheme.lower() in ("file", "local"):
        return f"{scheme}://{rest}" if rest.startswith("/") else f"the path alone: {rest}"
    return f"{scheme}://{rest.lstrip('/')}"


def check_id(value: str) -> str:
    """Return ``value`` if it can name a job or run folder; raise ValueError otherwise.

    Ids become path segments and S3 keys, so they are kept to ASCII ``[A-Za-z0-9._-]`` (written
    out: ``str.isalnum`` and ``\\w`` accept any Unicode letter or digit, such as ``r²``) and must
    not start with '.' or '-' (hidden files, options).
    """
    if not _SAFE_ID.fullmatch(value):
        raise ValueError(f"must be ASCII letters, digits, '.', '_' or '-' and not start with '.' or '-': {value!r}")
    return value


def canonical_url(url: str) -> str:
    """The URL that identifies an input: local paths become absolute ``file://`` URLs.

    Raises:
        UnsupportedUrl: an unsupported or mistyped scheme (:func:`check_url`).
    """
    check_url(url)
    if "://" in url:
        return url
    return "file://" + os.path.abspath(url)


def job_id_for(rollouts: str | Sequence[str]) -> str:
    """``<parent folder, sanitised>-<first 8 hex of sha256(canonical rollouts URL(s))>``.

    The same rollouts URL always gives the same id, whoever asks (CLI, batch, trigger). A
    sharded job hashes its shard URLs in order, one per line, so ``run`` over a glob and the
    sweep over the folder name the same job; a one-file list is that file's id.
    """
    urls = [canonical_url(u) for u in ([rollouts] if isinstance(rollouts, str) else rollouts)]
    first = urls[0]
    parent = first.rstrip("/").rsplit("/", 2)[-2] if first.count("/") >= 2 else "job"
    name = _UNSAFE.sub("_", parent) or "job"
    return f"{name}-{hashlib.sha256(chr(10).join(urls).encode()).hexdigest()[:8]}"


def new_run_id(now: datetime | None = None) -> str:
    """``YYYYMMDDTHHMMSSZ-<6 hex>``: sortable by start time, unique across concurrent starts."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"{moment:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


FAILURES_SUFFIX = "_failures"
MATERIALIZED_SUFFIX = "_materialized_inputs"


def sidecar_url(rollouts_url: str, suffix: str) -> str:
    """``<stem><suffix>.jsonl`` beside the rollouts file: where Gym writes a shard's sidecars."""
    stem = rollouts_url.removesuffix(".jsonl")
    return f"{stem}{suffix}.jsonl"


def default_failures_url(rollouts_url: str) -> str:
    """``<stem>_failures.jsonl`` beside the rollouts file."""
    return sidecar_url(rollouts_url, FAILURES_SUFFIX)
