"""Test-only wrapper around the CLI that SIGKILLs itself at a chosen write (crash tests).

``EVIDENCE_STAGE_KILL_AT=<before|after>:<file-name glob>:<n>`` kills the process right before
or right after the n-th atomic publish (``os.replace``/``os.link`` of a temp file) whose target
name matches the glob. Every local output goes through one of those two calls, so a kill lands
exactly between two durable states, as a real crash would. Production code carries no hook.
"""

from __future__ import annotations

import fnmatch
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

KILL_AT = "EVIDENCE_STAGE_KILL_AT"


def install(spec: str) -> None:
    """Wrap ``os.replace`` and ``os.link`` so the n-th matching publish kills the process."""
    when, pattern, nth = spec.split(":")
    seen = 0
    lock = threading.Lock()

    def wrap(real: Callable[..., Any]) -> Callable[..., Any]:
        def publish(src: Any, dst: Any, *args: Any, **kwargs: Any) -> Any:
            nonlocal seen
            hit = fnmatch.fnmatchcase(os.path.basename(os.fspath(dst)), pattern)
            if hit:
                with lock:
                    seen += 1
                    fire = seen == int(nth)
                if fire and when == "before":
                    os.kill(os.getpid(), signal.SIGKILL)
            result = real(src, dst, *args, **kwargs)
            if hit and fire and when == "after":
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        return publish

    os.replace = wrap(os.replace)
    os.link = wrap(os.link)


def main() -> int:
    if os.environ.get(KILL_AT):
        install(os.environ[KILL_AT])
    from flows.cli.main import main as cli_main

    return cli_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
