"""Artifact links a browser can open: presigned HTTPS for object stores, ``file://`` for local files.

The Prefect UI turns a bare path into a link relative to itself (a 404) and no browser opens
``s3://``. An S3 object gets a presigned URL (fsspec ``sign``), valid for the longest time
SigV4 allows unless the credentials themselves expire sooner; a local file gets its
``file://`` URL, which opens on the machine that wrote it. A store that cannot sign
(``memory://``) gets its URL as text.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from prefect.artifacts import create_link_artifact, create_markdown_artifact

from tasks.storage import Location

SIGNED_LINK_LIFETIME = timedelta(days=7)  # S3 SigV4's maximum


def openable_url(location: Location) -> tuple[str | None, str]:
    """(a URL a browser opens, or None; how long and where it works, for the artifact description)."""
    if location.is_local:
        return f"file://{location.path}", "Local file: the link opens on the machine that wrote it."
    try:
        url = location.fs.sign(location.path, expiration=int(SIGNED_LINK_LIFETIME.total_seconds()))
    except NotImplementedError:
        return None, f"{location.url} cannot be signed for a browser: open it with its own client."
    until = (datetime.now(timezone.utc) + SIGNED_LINK_LIFETIME).strftime("%Y-%m-%d %H:%M UTC")
    return url, f"Presigned link, valid until {until} (7 days) or until the signing credentials expire."


def publish_link(key: str, location: Location, label: str, description: str) -> None:
    """A link artifact to ``location`` when a browser can open it, else its URL as text; always described."""
    url, note = openable_url(location)
    if url is None:
        create_markdown_artifact(key=key, markdown=f"{label}: `{location.url}`", description=f"{description} {note}")
    else:
        create_link_artifact(key=key, link=url, link_text=label, description=f"{description} {note}")


def publish_folder(key: str, folder: Location, label: str, description: str) -> None:
    """A folder (no single object to sign) as text: its URL, to copy into a client or a console."""
    create_markdown_artifact(key=key, markdown=f"{label}: `{folder.url}`", description=description)
