"""Artifact links a browser can open: presigned HTTPS for object stores, ``file://`` for local files.

The Prefect UI turns a bare path into a link relative to itself (a 404) and no browser opens
``s3://``. An S3 object gets a presigned URL (fsspec ``sign``), valid for the longest time
SigV4 allows unless the credentials themselves expire sooner; a local file gets its
``file://`` URL, which opens on the machine that wrote it. A store that cannot sign
(``memory://``) gets its URL as text. ``tasks.publish.task`` records them as artifacts.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

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

