"""The reduce as a Prefect task: ``tasks.reduce.outputs`` writes every run-level output from the parts."""

from __future__ import annotations

import time

from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.attempts.context import RunContext
from tasks.discover.refs import AttemptRef
from tasks.reduce.attempt_log import AttemptLog
from tasks.reduce.outputs import ReduceSummary, write_outputs
from tasks.storage.retry import retry_on_transient
from tasks.storage.spill import Spill


@task(name="reduce-run", cache_policy=NO_CACHE, persist_result=False, retries=2, retry_condition_fn=retry_on_transient)
def reduce_run(ctx: RunContext, attempts: Spill[AttemptRef], all_or_nothing: bool) -> ReduceSummary:
    """Write every run-level output from the parts; the summary's ``log`` holds each attempt's manifest entry.

    A retried reduce starts over with a new log, so no entry is recorded twice.
    """
    started = time.perf_counter()
    result = ReduceSummary(AttemptLog())
    try:
        write_outputs(ctx, attempts, all_or_nothing, result)
    except BaseException:
        result.log.close()
        raise
    result.seconds = time.perf_counter() - started
    return result


