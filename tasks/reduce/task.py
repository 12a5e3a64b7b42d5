"""The reduce as a Prefect task: ``tasks.reduce.outputs`` writes every run-level output from the parts."""

from __future__ import annotations

import gc
import importlib
import threading
import time

from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.attempts.context import RunContext
from tasks.discover.refs import AttemptRef
from tasks.reduce.attempt_log import AttemptLog
from tasks.reduce.outputs import ReduceSummary, write_outputs
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
def reduce_run(ctx: RunContext, attempts: Spill[AttemptRef], all_or_nothing: bool) -> ReduceSummary:
    """Write every run-level output from the parts; the summary's ``log`` holds each attempt's manifest entry.

    A retried reduce starts over with a new log, so no entry is recorded twice.
    """
    started = time.perf_counter()
    # What is alive now (modules, the plan, Prefect's client) outlives the reduce, which makes
    # millions of short-lived objects: frozen, the collector's full passes skip it (they were a
    # large share of a 2,000-rollout run's reduce in one profile, on a loaded machine). Thawed after, so a long-lived process (a
    # deployment's worker) still collects whatever of it becomes cyclic garbage.
    gc.freeze()
    result = ReduceSummary(AttemptLog())
    try:
        write_outputs(ctx, attempts, all_or_nothing, result)
    except BaseException:
        result.log.close()
        raise
    finally:
        gc.unfreeze()
    result.seconds = time.perf_counter() - started
    return result
