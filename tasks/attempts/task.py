"""The fan-out task: one Prefect task run per group of attempts.

The task itself is cheap orchestration. Its CPU-bound work (``tasks.attempts.group.run_group``) runs
in the task's own thread, or, when the flow hands it an attempt pool, in the pool's worker
processes, a chunk of the group each: Prefect then keeps every task run in the flow process
(about 10 ms each) while both cores parse, collect, check and convert.
"""

from __future__ import annotations

from concurrent.futures import Executor, wait

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import task_run as task_run_runtime
from prefect.tasks import exponential_backoff

from tasks.attempts.context import RunContext
from tasks.attempts.group import GroupSummary, run_group
from tasks.attempts.parts import SEGMENT_PARTS
from tasks.discover.refs import AttemptRef
from tasks.storage.retry import retry_on_transient

# In the attempt pool a group goes to the workers in chunks of at most this many attempts, so
# the workers share each group: none waits at a run's end while another finishes the last
# group alone. Each chunk is a ``run_group`` of its own: one ranged read of its rows, and one
# segment unless its parts pass the segment's byte limit first.
POOL_CHUNK = SEGMENT_PARTS


@task(
    name="process-attempts",
    cache_policy=NO_CACHE,
    persist_result=False,
    retries=3,
    retry_delay_seconds=exponential_backoff(backoff_factor=1),
    retry_jitter_factor=0.5,
    retry_condition_fn=retry_on_transient,
)
def process_group(ctx: RunContext, attempts: list[AttemptRef], pool: Executor | None = None) -> GroupSummary:
    """Process one contiguous group of attempts from one input file, in ``pool`` when given.

    A retry or a resume keeps the parts already written; storage errors raised in a worker
    process come back here unchanged, so Prefect's retry condition sees them. Every chunk ends
    before the task does, so a retry never runs beside a chunk still writing. A group that checks
    for parts already written stays whole: the check lists the source's folder, once per call.
    """
    check_existing = ctx.resume or (task_run_runtime.run_count or 1) > 1
    if pool is None:
        return run_group(ctx, attempts, check_existing)
    size = len(attempts) if check_existing else POOL_CHUNK
    chunks = [pool.submit(run_group, ctx, attempts[i : i + size], check_existing) for i in range(0, len(attempts), size)]
    wait(chunks)
    return GroupSummary.total(chunk.result() for chunk in chunks)
