"""Rollout identity exactly as NeMo Gym 0.7.0 derives it (spec: collection.md §2).

Two derivations exist and both matter:

* the *capture* rollout id names the ``<rollout_id>.capture.jsonl`` file a rollout's model calls
  were written to (:func:`capture_rollout_id`, plus the file-name check
  :func:`check_capture_file_id`);
* the *trajectory* identity ``(task_id, rollout_id)`` stamps ``ng_trajectory``
  (:func:`trajectory_identity`).

0.7.0 raises builtin exceptions from both. The capture path turns them into
:class:`~evidence.errors.RowRejected` (the row is reported, not collected); the trajectory path
keeps the builtin class because the projection records that class name as a gap detail.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

from evidence.errors import RowRejected

__all__ = ["capture_rollout_id", "check_capture_file_id", "trajectory_identity"]

# ``re.match`` with ``$``: a single trailing newline passes, as in 0.7.0.
_EXPLICIT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_FILE_ID_CHARS = frozenset(string.ascii_letters + string.digits + "._-")
_TASK_ID_KEYS = ("task_id", "problem_id", "instance_id")


def _derive_rollout_id(record: Mapping[str, Any]) -> str | None:
    """The §2.2 id, raising the builtin exception 0.7.0 raises for bad ids or attempts."""
    explicit = record.get("_ng_rollout_id")
    if explicit is not None:
        if not isinstance(explicit, str) or _EXPLICIT_ID.match(explicit) is None:
            raise ValueError(
                "_ng_rollout_id must be a string of letters, digits, dots, dashes or "
                f"underscores starting with a letter or digit; got {explicit!r}"
            )
        base = explicit
    else:
        task_index = record.get("_ng_task_index")
        rollout_index = record.get("_ng_rollout_index")
        if task_index is None or rollout_index is None:
            return None
        base = f"{task_index!s}-{rollout_index!s}"
    attempt = record.get("_ng_attempt_index")
    if attempt is not None:
        attempt_number = int(attempt)
        if attempt_number > 0:
            return f"{base}-a{attempt_number}"
    return base


def capture_rollout_id(record: Mapping[str, Any]) -> str | None:
    """Return the id naming the record's capture file, or None when the record has none.

    Raises:
        RowRejected: the explicit id or the attempt index is invalid; ``kind``/``message`` are
            the class and text 0.7.0 raises (e.g. ``int()``'s own message for ``"x"``).
    """
    try:
        return _derive_rollout_id(record)
    except (ValueError, TypeError, OverflowError) as exc:
        raise RowRejected(type(exc).__name__, str(exc)) from exc


def check_capture_file_id(rollout_id: str) -> None:
    """Refuse ids that are not safe file names (0.7.0's store check, looser than §2.2 at the start).

    Raises:
        RowRejected: ``ValueError("Invalid rollout id: <repr>")``.
    """
    if not rollout_id or not _FILE_ID_CHARS.issuperset(rollout_id):
        raise RowRejected("ValueError", f"Invalid rollout id: {rollout_id!r}")


def trajectory_identity(row: Mapping[str, Any]) -> tuple[str, str]:
    """Return ``(task_id, rollout_id)`` for ``ng_trajectory`` (§2.5).

    Raises the builtin exception 0.7.0 raises (``KeyError`` for a missing index, ``ValueError``
    from ``int()`` or the explicit-id check, ...): callers record its class name. 0.7.0 formats
    the task index before it looks at the id keys (it is the fallback's eager argument), so a
    row without ``_ng_task_index`` raises ``KeyError`` even when it has a ``task_id``.
    """
    task_index = str(row["_ng_task_index"])
    task_id = next((str(row[key]) for key in _TASK_ID_KEYS if row.get(key) is not None), task_index)
    rollout_id = _derive_rollout_id(row)
    if rollout_id is None:
        rollout_id = f"{task_index}-{row['_ng_rollout_index']!s}"
    return task_id, rollout_id


def capture_file_id(record: Mapping[str, Any]) -> str | None:
    """The capture file id 0.7.0 looks up for this row; None when it has none or an invalid one.

    Discovery uses it to claim capture files, the engine to report the attempt's rollout id.
    """
    try:
        rollout_id = capture_rollout_id(record)
        if rollout_id is not None:
            check_capture_file_id(rollout_id)
    except Exception:  # noqa: BLE001 - an id that cannot be derived names no capture file
        return None
    return rollout_id
