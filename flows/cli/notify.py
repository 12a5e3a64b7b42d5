"""``evidence-stage notify``: announce a finished evaluation job (the ``gym.eval.completed`` event), or with
``--started`` one that has just started (``gym.eval.started``, which starts the follow deployment).

The event goes straight to the server's events endpoint and the command waits for it, so the
last line of an eval script knows whether the stage was told.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any


def register(subcommands: Any) -> None:
    parser = subcommands.add_parser("notify", help="emit gym.eval.completed for a finished job (triggers evidence-stage/on-eval-complete)")
    parser.add_argument(
        "--rollouts",
        required=True,
        metavar="URL",
        help="the job's rollouts JSONL (local path, file://, s3://); it must exist (unless --started)",
    )
    parser.add_argument(
        "--capture-dir",
        required=True,
        metavar="URL",
        help="the job's model-call capture directory (model-calls/); it must exist (unless --started)",
    )
    parser.add_argument(
        "--started",
        action="store_true",
        help="announce a job that has just started (gym.eval.started: triggers evidence-stage/follow); its files need not exist yet",
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from prefect.events import Event
    from prefect.settings import PREFECT_API_URL

    from flows.deployments import EVAL_COMPLETED, EVAL_STARTED, eval_event

    if not PREFECT_API_URL.value():
        raise RuntimeError("no Prefect server to notify: set PREFECT_API_URL (e.g. http://127.0.0.1:4200/api)")
    fields = eval_event(args.rollouts, args.capture_dir, EVAL_STARTED if args.started else EVAL_COMPLETED)
    if not args.started:
        check_job(fields["payload"]["rollouts"], fields["payload"]["capture_dir"])
    event = Event(**fields)
    asyncio.run(_emit(event))
    print(f"emitted {event.event} {event.id} for {event.payload['rollouts']}")
    return 0


def check_job(rollouts: str, capture_dir: str) -> None:
    """Refuse to announce a job whose rollouts file or capture directory is missing (the run it
    triggers would fail on the server, where nobody is watching); storage that cannot be asked
    from here (other credentials than the server's) is announced anyway, and said so."""
    from tasks.discover.inputs import check_inputs
    from tasks.inputs.shards import Shard
    from tasks.storage import InputNotFound, Location, StorageError

    try:
        check_inputs([Shard(Location(rollouts))], Location(capture_dir))
    except InputNotFound:
        raise
    except StorageError as exc:
        print(f"evidence-stage: note: inputs not checked from here ({exc}); announcing the job anyway", file=sys.stderr)


async def _emit(event: Any) -> None:
    from prefect.events.clients import get_events_client

    async with get_events_client() as client:
        await client.emit(event)
