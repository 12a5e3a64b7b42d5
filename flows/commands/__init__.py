"""One module per ``evidence-stage`` subcommand; each exposes ``register(subparsers)``."""

from flows.commands import batch, export_atif, health, notify, report, run, serve

COMMANDS = (run, health, export_atif, report, batch, serve, notify)
