"""One module per ``evidence-stage`` subcommand; each exposes ``register(subparsers)``."""

from flows.commands import batch, notify, run, serve

COMMANDS = (run, batch, serve, notify)
