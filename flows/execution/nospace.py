"""A run stopped by a full disk: which folder filled, and how much the run needs there, in one line.

The temporary folder (``TMPDIR``) holds what a run keeps on disk rather than in memory: the
job plan, the reduce's spills, the tables before they are published. When it filled, the run
ended in Prefect's traceback and a last line ``[Errno 28] No space left on device`` that named
no place.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import tempfile
from collections.abc import Sequence

from evidence import StageError
from tasks.inputs.shards import Shard

NO_SPACE = os.strerror(errno.ENOSPC)
TEMP_SHARE = 5
"""A run's peak in the temporary folder is about a fifth of its rollouts files' size: 36 MiB for a
2,000-rollout job of 209 MiB (tests/jobgen.py, history_bytes=2000; ``du -sb`` of TMPDIR every 50 ms)."""
TEMP_WRITERS = frozenset({"tempfile", "tasks.storage.spill", "tasks.tables.parquet", "tasks.discover.scan"})
"""The modules that write the temporary folder: a failed write in one of them filled it."""


class NoSpace(StageError):
    """The disk a run writes filled up; the message says which folder and what the run needs."""


def no_space(exc: BaseException) -> OSError | None:
    """The ``ENOSPC`` error that ``exc`` is or was raised from, if any."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not s for s in seen):
        if isinstance(current, OSError) and current.errno == errno.ENOSPC:
            return current
        seen.append(current)
        current = current.__cause__ or current.__context__
    return None


def about_no_space(record: logging.LogRecord) -> bool:
    """Whether a log record tells of a full disk: Prefect's traceback of the failed run, its final state."""
    if record.exc_info and record.exc_info[1] is not None and no_space(record.exc_info[1]) is not None:
        return True
    return NO_SPACE in record.getMessage()


def no_space_reason(error: OSError, shards: Sequence[Shard]) -> str:
    """One line: the temporary folder, its free space and the run's estimated need there, when a
    write to it failed; else the file the failed write named (the output's disk)."""
    frames, tb = set(), error.__traceback__
    while tb is not None:
        frames.add(tb.tb_frame.f_globals.get("__name__"))
        tb = tb.tb_next
    if not frames & TEMP_WRITERS:
        return f"{NO_SPACE} writing {error.filename or 'the run directory'}"
    temp = tempfile.gettempdir()
    inputs = sum(f.entry().size for shard in shards for f in (shard.main, shard.failures) if f is not None and f.is_file())
    return (
        f"{NO_SPACE} in the temporary folder {temp}: this run needs about {_mib(inputs // TEMP_SHARE)} there"
        f" (a fifth of its rollouts files), {_mib(shutil.disk_usage(temp).free)} are free once it let go of its files;"
        " free some, or set TMPDIR to a folder with room"
    )


def _mib(size: int) -> str:
    return f"{size / 2**20:,.0f} MiB" if size >= 2**20 else f"{size:,} bytes"
