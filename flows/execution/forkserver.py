"""The forkserver the ``process`` runner's attempt workers fork from, and starting it early.

A forkserver is a fresh interpreter that imports ``tasks.attempts.group`` (no Prefect), and s3fs for a
run on S3, once; every attempt worker is a fork of it, so workers start in milliseconds.
Booting it takes about a second, which a small job feels whole: the CLI starts it before it
imports Prefect, so the two run at once on two cores instead of one after the other inside the
flow (issue 14, start-up).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
from multiprocessing.context import BaseContext

from flows.params.stage import StageParams

# The worker code, and the watch that ends a worker with the pool's owner (tasks.attempts.lifeline).
WORKER_MODULES = ["tasks.attempts.group", "tasks.attempts.lifeline"]


def worker_modules(params: StageParams) -> list[str]:
    """What the forkserver imports for every worker: the worker code, and s3fs when the run touches S3.

    fsspec imports a filesystem's package at its first URL; s3fs and botocore cost about half a
    second of CPU, which each worker would otherwise pay before its first read (on discovery's
    path), and the forkserver pays once while the CLI imports Prefect.
    """
    rollouts = [params.rollouts] if isinstance(params.rollouts, str) else params.rollouts
    urls = [*rollouts, params.capture_dir, params.output, params.failures or ""]
    touches_s3 = any(scheme in url for url in urls for scheme in ("s3://", "s3a://"))
    return [*WORKER_MODULES, "s3fs"] if touches_s3 else WORKER_MODULES


def forkserver_context(params: StageParams) -> BaseContext:
    """The multiprocessing context of the attempt pool, its forkserver preloading ``worker_modules``.

    The preload counts only where the forkserver is not running yet: a process keeps its first one.
    """
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(worker_modules(params))
    return context


def start_forkserver(params: StageParams) -> None:
    """Launch the forkserver without waiting for it: it imports while the caller goes on.

    The process keeps this one forkserver; the attempt pool started later in the flow connects
    to it and blocks only if it is still importing.
    """
    forkserver_context(params)
    multiprocessing.forkserver.ensure_running()
