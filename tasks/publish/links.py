"""Artifact links a browser can open: presigned HTTPS for object stores, ``file://`` for local files.

The Prefect UI turns a bare path into a link relative to itself (a 404) and no browser opens
``s3://``. An S3 object gets a presigned URL (fsspec ``sign``), valid for the longest time
SigV4 allows unless the credentials themselves expire sooner. A local file gets its URL as
text with what works: browsers refuse ``file://`` links from a web page (the Prefect UI), so a
link would look clickable and do nothing; pasted into the address bar on the machine that wrote
it, the URL opens. A store that cannot sign (``memory://``) gets its URL as text too.
``tasks.publish.task`` records them as artifacts.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from tasks.storage import Location
from tasks.storage.probe import signed_url

SIGNED_LINK_LIFETIME = timedelta(days=7)  # S3 SigV4's maximum


def openable_url(location: Location) -> tuple[str | None, str]:
    """(a URL a browser opens, or None; how long and where it works, for the artifact description)."""
    if location.is_local:
        return None, (
            f"A local file: paste file://{location.path} into the address bar of a browser on the machine that wrote it"
            " (a web page such as the Prefect UI cannot open file:// links), or store the outputs on S3 for a link that opens anywhere."
        )
    try:
        url = signed_url(location, int(SIGNED_LINK_LIFETIME.total_seconds()))
    except NotImplementedError:
        return None, f"{location.url} cannot be signed for a browser: open it with its own client."
    until = (datetime.now(UTC) + SIGNED_LINK_LIFETIME).strftime("%Y-%m-%d %H:%M UTC")
    return url, f"Presigned link, valid until {until} (7 days) or until the signing credentials expire."


def artifact_key(text: str) -> str:
    """Prefect artifact keys allow lowercase letters, digits and dashes only."""
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")


def job_artifact_key(key: str, job_id: str) -> str:
    """A run's artifact key, its job's own (``evidence-stage-verdicts-<job id>``): Prefect keeps the
    latest artifact per key, and a fixed key showed whichever job ran last."""
    return artifact_key(f"{key}-{job_id}")
