"""One module per ``evidence-stage`` subcommand; each exposes ``register(subparsers)``."""

from flows.cli import batch, compare, export, export_atif, health, notify, report, run, select_rows, serve, tables

COMMANDS = (run, health, export_atif, report, compare, batch, serve, notify, export, tables, select_rows)
