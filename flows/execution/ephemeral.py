"""Prefect's ephemeral server, out of reach of the terminal's Ctrl-C and ended with its owner.

Without ``PREFECT_API_URL`` a CLI run starts Prefect's temporary server as a child in its own
process group. A Ctrl-C in the terminal signals the whole foreground group, so the server died
with the run it served: the run could not report that it crashed and ended in pages of
event-client errors and ``[Errno 111] Connection refused``. Started in a process group of its
own, the server hears only its owner, which stops it when it exits; and it watches its owner
through a pidfd (as attempt workers do, ``tasks.attempts.lifeline``), so a ``kill -9`` of the
CLI no longer leaves it running.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

_UVICORN_OWNED_BY = """
import os, runpy, select, sys, threading
owner = int(sys.argv.pop(1))
try:
    watched = os.pidfd_open(owner)
except ProcessLookupError:
    os._exit(0)
def watch():
    select.select([watched], [], [])
    os._exit(0)
threading.Thread(target=watch, name="owner-lifeline", daemon=True).start()
sys.argv[0] = "uvicorn"
runpy.run_module("uvicorn", run_name="__main__", alter_sys=True)
"""
"""``python -m uvicorn ARGS`` that exits when the process named by its first argument does."""


class _Subprocess:
    """``subprocess`` as Prefect's server module sees it: ``Popen`` of ``python -m uvicorn`` starts it owned and apart."""

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)

    @staticmethod
    def Popen(args: list[str], **kwargs: Any) -> subprocess.Popen[Any]:  # noqa: N802 - subprocess's name
        if list(args[1:3]) == ["-m", "uvicorn"]:
            args = [args[0], "-c", _UVICORN_OWNED_BY, str(os.getpid()), *args[3:]]
            kwargs.setdefault("process_group", 0)
        return subprocess.Popen(args, **kwargs)


def shield_ephemeral_server() -> None:
    """Start Prefect's ephemeral server, when this process needs one, in a process group of its own (idempotent)."""
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        return
    from prefect.server.api import server

    if not isinstance(server.subprocess, _Subprocess):  # type: ignore[attr-defined]  # Prefect's module attribute, not exported
        server.subprocess = _Subprocess()  # type: ignore[attr-defined,assignment]
