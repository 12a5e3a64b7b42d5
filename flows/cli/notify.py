"""``evidence-stage notify``: announce a finished evaluation job (the ``gym.eval.completed`` event).

The event goes straight to the server's events endpoint and the command waits for it, so the
last line of an eval script knows whether the stage was told.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any


def register(subcommands: Any) -> None:
    parser = subcommands.add_parser("notify", help="emit gym.eval.completed for a finished job (triggers evidence-stage/on-eval-complete)")
    parser.add_argument("--rollouts", required=True, help="rollouts JSONL URL")
    parser.add_argument("--capture-dir", required=True, help="model-call capture directory URL")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from prefect.events import Event
    from prefect.settings import PREFECT_API_URL

    from flows.deployments import eval_completed_event

    if not PREFECT_API_URL.value():
        raise RuntimeError("no Prefect server to notify: set PREFECT_API_URL (e.g. http://127.0.0.1:4200/api)")
    event = Event(**eval_completed_event(args.rollouts, args.capture_dir))
    asyncio.run(_emit(event))
    print(f"emitted {event.event} {event.id} for {event.payload['rollouts']}")
    return 0


async def _emit(event: Any) -> None:
    from prefect.events.clients import get_events_client

    async with get_events_client() as client:
        await client.emit(event)
