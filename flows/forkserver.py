"""The forkserver the ``process`` runner's attempt workers fork from, and starting it early.

A forkserver is a fresh interpreter that imports ``tasks.attempt`` (no Prefect) once; every
attempt worker is a fork of it, so workers start in milliseconds. Booting it takes about a
second, which a small job feels whole: the CLI starts it before it imports Prefect, so the two
run at once on two cores instead of one after the other inside the flow (issue 14, start-up).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
from multiprocessing.context import BaseContext

# The worker code, and the watch that ends a worker with the pool's owner (tasks.lifeline).
WORKER_MODULES = ["tasks.attempt", "tasks.lifeline"]


def forkserver_context() -> BaseContext:
    """The multiprocessing context of the attempt pool, its forkserver preloading the worker module."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(WORKER_MODULES)
    return context


def start_forkserver() -> None:
    """Launch the forkserver without waiting for it: it imports while the caller goes on.

    The process keeps this one forkserver; the attempt pool started later in the flow connects
    to it and blocks only if it is still importing.
    """
    forkserver_context()
    multiprocessing.forkserver.ensure_running()
