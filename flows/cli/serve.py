"""``evidence-stage serve``: the long-running deployments (event trigger, manual, compare, sweep)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

DEFAULT_CONFIG = Path("configs/stage.yaml")


def register(subcommands: Any) -> None:
    parser = subcommands.add_parser("serve", help="serve the on-eval-complete, manual, compare and sweep deployments against the Prefect server")
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help=f"serve settings (default {DEFAULT_CONFIG})")
    parser.add_argument("--limit", type=int, help="flow runs executed at the same time (default: unlimited)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from prefect import serve

    from flows.deployments import build_deployments, install_crash_automation, load_config

    install_crash_automation()
    serve(*build_deployments(load_config(args.config)), limit=args.limit)
    return 0
