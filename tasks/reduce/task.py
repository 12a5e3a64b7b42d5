"""The reduce's tail as a Prefect task: the last groups folded, then every run-level output (``tasks.reduce.outputs``)."""

from __future__ import annotations

import importlib
import threading

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import task_run as task_run_runtime

from tasks.attempts.context import RunContext
from tasks.discover.refs import AttemptRef
from tasks.reduce.feed import Feed
from tasks.reduce.outputs import ReduceSummary, RunFolds, fold_all
from tasks.storage.retry import retry_on_transient
from tasks.storage.spill import Spill

REDUCE_LIBRARIES = ("pandas", "scipy.special", "pyarrow.parquet")
"""The libraries the reduce loads on first use (the scores' pandas and scipy, the tables' pyarrow): about a second of imports."""


def preload_libraries() -> threading.Thread:
    """Start importing ``REDUCE_LIBRARIES`` on a thread of its own, and return it.

    Started before the fan-out, whose work runs in the attempt pool's processes while the flow
    process mostly waits: the reduce then finds them loaded. An import the reduce reaches
    first just waits for the thread's (Python's import lock); a library that fails to load
    here fails again where the reduce imports it, with its own error.
    """

    def load() -> None:
        for name in REDUCE_LIBRARIES:
            try:
                importlib.import_module(name)
            except ImportError:
                return

    thread = threading.Thread(target=load, name="evidence-stage-preload", daemon=True)
    thread.start()
    return thread


@task(name="reduce-run", cache_policy=NO_CACHE, persist_result=False, retries=2, retry_condition_fn=retry_on_transient)
def reduce_run(ctx: RunContext, attempts: Spill[AttemptRef], all_or_nothing: bool, feed: Feed) -> ReduceSummary:
    """Wait for the feed to fold the last groups, then write every run-level output; the
    summary's ``log`` holds each attempt's manifest entry.

    A retry starts over from the parts with new folds (and a new log), so no entry is recorded
    twice: the folds fed during the fan-out failed or were discarded with their outputs.
    """
    if (task_run_runtime.run_count or 1) > 1:
        return fold_all(ctx, attempts, all_or_nothing)
    folds: RunFolds = feed.folds()
    try:
        return folds.finish()
    except BaseException:
        folds.close()
        raise
