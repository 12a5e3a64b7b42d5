"""``gym eval health-check`` on the raw bytes of an existing rollouts file.

The same row evaluation and reduce the stage uses, fed from the file's lines: blank lines are
skipped but counted for line numbers, and lines that are not JSON objects become unreadable
digests, exactly as 0.7.0 reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

import orjson

from evidence.health.digest import RowDigest
from evidence.health.evaluate import evaluate_row, unreadable_row
from evidence.health.ignored import normalize_ignored_checks
from evidence.health.reduce import health_report_text, reduce_digests

SUMMARY_NAME = "quality_summary.json"
VERDICTS_NAME = "rollout_verdicts.jsonl"


class HealthFiles(NamedTuple):
    """The two report files' exact texts and the report the CLI prints."""

    quality_summary: str
    rollout_verdicts: str
    report: str


def health_check_bytes(data: bytes, *, rollouts_path: str, output_dir: str, ignored: Iterable[str] = ()) -> HealthFiles:
    """Health-check a whole rollouts file.

    Args:
        data: the file's bytes.
        rollouts_path: the file as the user named it (quoted in unreadable-line locators).
        output_dir: where the reports go (quoted in the printed report).
        ignored: check ids to ignore, normalised like 0.7.0 (raises ``UnknownHealthCheck``).
    """
    ignored_ids = normalize_ignored_checks(ignored)
    result = reduce_digests(digest_lines(data, source=rollouts_path, ignored=ignored_ids), ignored_ids)
    summary_path = f"{output_dir.rstrip('/')}/{SUMMARY_NAME}"
    return HealthFiles(result.summary_text(), result.verdicts_text(), health_report_text(result.summary(), summary_path))


def digest_lines(data: bytes, *, source: str, ignored: tuple[str, ...]) -> Iterator[RowDigest]:
    """One digest per non-blank line, in file order."""
    ordinal = 0
    for line_number, raw in enumerate(data.split(b"\n"), start=1):
        text = raw.strip()
        if not text:
            continue
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            yield unreadable_row(source, line_number, type(exc).__name__, ignored=ignored)
        else:
            yield evaluate_row(value, source=source, line=line_number, ordinal=ordinal, ignored=ignored)
        ordinal += 1
