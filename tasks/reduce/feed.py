"""The reduce beside the fan-out: finished groups folded on a thread of the flow process, in input order.

The fan-out hands each group here once it and every group before it have finished
(``flows.execution.groups.fan_out``); a thread of its own reads their parts and folds them
(``RunFolds.consume``) while the attempt workers go on with the next groups, so when the last
attempt ends only the last groups and the folds that need the whole run are left (the
manifest's ``tail_s``). The queue is short: when the folds fall behind, the fan-out waits for
them instead of holding every finished group's attempts.
"""

from __future__ import annotations

import gc
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Self

from tasks.discover.refs import AttemptRef
from tasks.reduce.outputs import RunFolds, Standing

FEED_GROUPS = 4
"""Finished groups waiting for the folds, at most (a group is at most ``MAX_GROUP`` attempts' references)."""


class Feed:
    """Groups to ``RunFolds.consume`` on a thread, in the order ``put``; ``folds`` once every group put is folded.

    The folds are opened on the thread too (``open_folds``), so the fan-out never waits for
    what opening them imports (the tables' pyarrow, loading meanwhile on the preload thread).

    A group that fails to fold stops the folding (the later groups are only taken off the
    queue, so the fan-out never waits for a consumer that is gone) and ``folds`` raises its error;
    leaving the block on an error stops it at once.
    While the feed is open the interpreter's objects alive at its start are frozen out of the
    cycle collector (``gc.freeze``): the folds make millions of short-lived objects, and full
    collections walking the plan, Prefect's client and every module were a large share of a
    reduce's time in one profile.
    """

    def __init__(self, open_folds: Callable[[], RunFolds]) -> None:
        self._open_folds = open_folds
        self._folds: RunFolds | None = None
        self._queue: queue.Queue[Sequence[AttemptRef] | None] = queue.Queue(maxsize=FEED_GROUPS)
        self._error: BaseException | None = None
        self._abandoned = False  # the run failed: the groups still waiting are only taken off the queue
        self._closed = False
        gc.freeze()
        self._thread = threading.Thread(target=self._run, name="evidence-stage-reduce", daemon=True)
        self._thread.start()

    def put(self, group: Sequence[AttemptRef]) -> None:
        """The next finished group, in input order (waits while ``FEED_GROUPS`` are waiting)."""
        self._queue.put(group)

    def standing(self) -> Standing | None:
        """The folds as they stand (``RunFolds.standing``) while groups go on being folded; None until they are open, or once failed."""
        folds = self._folds
        return folds.standing() if folds is not None and self._error is None else None

    def folds(self) -> RunFolds:
        """The folds once every group put is folded (the caller finishes them); raises the folding's error."""
        self._stop()
        if self._error is not None:
            raise self._error
        assert self._folds is not None, "opened, or the error says why not"
        return self._folds

    def _run(self) -> None:
        try:
            self._folds = self._open_folds()
        except BaseException as error:  # noqa: BLE001  # handed to the caller by folds()
            self._error = error
        while (group := self._queue.get()) is not None:
            if self._folds is not None and self._error is None and not self._abandoned:
                try:
                    self._folds.consume(group)
                except BaseException as error:  # noqa: BLE001  # handed to the caller by folds()
                    self._error = error

    def _stop(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            self._thread.join()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        """Stop the thread; close the folds (what they did not finish is discarded; a finished run's are closed already)."""
        self._abandoned = kind is not None
        self._stop()
        if self._folds is not None:
            self._folds.close()
        gc.unfreeze()
