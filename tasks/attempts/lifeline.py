"""Attempt workers end with the process that owns their pool, however it ends.

The pool's workers are children of a forkserver, not of the flow process, and hold the pipes
that would tell them it is gone; after a ``kill -9`` of the CLI they kept writing parts and
never exited. Each worker watches the owner through a pidfd (Linux 5.3+) on a daemon thread
and exits the moment the owner does; the forkserver then exits with its last worker. Workers
also run without the automatic cycle collector (``start_worker``).
"""

from __future__ import annotations

import gc
import os
import select
import threading

from tasks.attempts.group import adopt_environment

EXIT_OWNER_GONE = 70


def exit_with(owner_pid: int) -> None:
    """End this process as soon as ``owner_pid`` ends (at once if it already has)."""
    try:
        pidfd = os.pidfd_open(owner_pid)
    except ProcessLookupError:
        os._exit(EXIT_OWNER_GONE)

    def watch() -> None:
        select.select([pidfd], [], [])
        os._exit(EXIT_OWNER_GONE)

    threading.Thread(target=watch, name="owner-lifeline", daemon=True).start()


def start_worker(environment: dict[str, str], owner_pid: int) -> None:
    """Attempt-pool initializer: the owner's environment, an exit when the owner exits, and no
    automatic cycle collection (``tasks.attempts.group.run_group`` collects once per call instead).

    The engine's values hold no reference cycles, yet CPython's collector scanned a row's whole
    live tree again every few tens of thousands of allocations: about a tenth of a worker's CPU
    on realistic rows. Each group's collection then freezes what survived it: a worker's
    modules, schemas and caches are ~120,000 objects, and scanning them took 80 ms a call.
    """
    adopt_environment(environment)
    exit_with(owner_pid)
    gc.disable()
