"""How far the fan-out has got, in plan order: the reduce follows it while groups are still running.

The fan-out finishes its groups oldest first, so after a group's result every attempt before
its end in the plan has its part stored. The reduce reads parts up to that point, so writing
``rollouts.jsonl`` (the run's largest output, bound by the disk) overlaps with the rest of the
fan-out instead of following it.
"""

from __future__ import annotations

import threading


class FanOutStopped(RuntimeError):
    """The fan-out failed or was interrupted before the reduce had every part it needs."""


class Frontier:
    """The number of the plan's first attempts whose parts are stored; it only grows."""

    def __init__(self) -> None:
        self._ready = 0
        self._stopped = False
        self._changed = threading.Condition()

    def advance(self, attempts: int) -> None:
        """The next ``attempts`` of the plan have their parts stored."""
        with self._changed:
            self._ready += attempts
            self._changed.notify_all()

    def stop(self) -> None:
        """No more attempts will be stored: whoever waits beyond the ready ones gets ``FanOutStopped``."""
        with self._changed:
            self._stopped = True
            self._changed.notify_all()

    def wait_beyond(self, index: int) -> int:
        """Wait until the attempt at 0-based ``index`` is ready; how many are ready then."""
        with self._changed:
            while self._ready <= index:
                if self._stopped:
                    raise FanOutStopped(f"the fan-out stopped after {self._ready} attempts")
                self._changed.wait()
            return self._ready
