"""``evidence-stage serve``: the long-running deployments (event trigger, manual, compare, sweep)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

CONFIG = Path("configs", "stage.yaml")


def default_config() -> Path:
    """``configs/stage.yaml`` of the installation (``$EVIDENCE_STAGE_HOME``, else the checkout
    this package runs from), wherever ``serve`` is started: a path relative to the current
    directory failed from anywhere else."""
    home = os.environ.get("EVIDENCE_STAGE_HOME")
    return (Path(home) if home else Path(__file__).resolve().parents[2]) / CONFIG


def register(subcommands: Any) -> None:
    parser = subcommands.add_parser(
        "serve", help="serve the on-eval-complete, manual, compare and sweep deployments against the Prefect server"
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="PATH",
        help=f"serve settings (default: {CONFIG} of $EVIDENCE_STAGE_HOME, else of this installation: {default_config()})",
    )
    parser.add_argument("--limit", type=int, help="flow runs executed at the same time (default: unlimited)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    config = args.config or default_config()
    if not config.is_file():
        raise FileNotFoundError(f"no serve config at {config}: give --config PATH (configs/stage.yaml of the repository is the example)")
    from prefect import serve

    from flows.deployments import build_deployments, install_crash_automation, load_config

    install_crash_automation()
    serve(*build_deployments(load_config(config)), limit=args.limit)
    return 0
