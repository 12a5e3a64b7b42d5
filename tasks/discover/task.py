"""The discovery task: a job's inputs listed, retried on transient storage errors; its rows are
scanned as the fan-out pulls them (``tasks.discover.scan.Discovery.attempts``), in the flow.

Its own module, not ``tasks/discover/scan.py``: that one is imported by the attempt workers, which
never import Prefect.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor

from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.discover.refs import AttemptRef
from tasks.discover.scan import Discovery
from tasks.inputs.shards import Shard
from tasks.storage import Location
from tasks.storage.retry import retry_on_transient


@task(name="discover-job", cache_policy=NO_CACHE, persist_result=False, retries=2, retry_condition_fn=retry_on_transient)
def discover_job(
    shards: tuple[Shard, ...],
    capture_dir: Location,
    pool: Executor | None = None,
    keep: Callable[[AttemptRef], bool] | None = None,
) -> Discovery:
    return Discovery(shards, capture_dir, pool, keep)
