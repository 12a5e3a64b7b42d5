"""One module per ``evidence-stage`` subcommand; each exposes ``register(subparsers)``."""

from flows.commands import run

COMMANDS = (run,)
