"""Retrying transient storage errors: exponential backoff with full jitter.

Two layers use this module: every storage call retries itself a few times (``call_with_retries``),
and Prefect task retries consult ``retry_on_transient`` so that a content error, which becomes
evidence, is never retried while a storage hiccup that outlived the inner budget is.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

from tasks.storage.base import StorageError, TransientStorageError, classify

T = TypeVar("T")

ATTEMPTS = 6
BASE_DELAY_S = 0.1
MAX_DELAY_S = 4.0


def backoff_delay(attempt: int, *, base: float = BASE_DELAY_S, cap: float = MAX_DELAY_S) -> float:
    """Full-jitter delay before retry number ``attempt`` (1-based): uniform in [0, base·2^attempt]."""
    return random.uniform(0.0, min(cap, base * 2**attempt))


def call_with_retries(url: str, fn: Callable[[], T], *, attempts: int = ATTEMPTS) -> T:
    """Run ``fn``; retry transient storage failures, raise permanent ones at once.

    Every raw exception is mapped through ``classify`` so callers only ever see our tree.
    """
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except Exception as exc:  # any failure: mapped onto the storage tree just below
            error = classify(url, exc)
            if not isinstance(error, TransientStorageError) or attempt == attempts:
                raise error from exc
            RETRY_COUNTER.record()
            time.sleep(backoff_delay(attempt))
    raise AssertionError("unreachable")


def retry_on_transient(_task: Any, _task_run: Any, state: Any) -> bool:
    """Prefect ``retry_condition_fn``: retry a task only when it failed on a transient storage error."""
    try:
        state.result()
    except TransientStorageError:
        return True
    except StorageError:
        return False
    except Exception:  # noqa: BLE001 - anything else is a bug or content: do not retry blindly
        return False
    return False


class _RetryCounter:
    """Counts storage-level retries in this process so runs can report them (manifest, tests)."""

    def __init__(self) -> None:
        self.count = 0

    def record(self) -> None:
        self.count += 1


RETRY_COUNTER = _RetryCounter()
