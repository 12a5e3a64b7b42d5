"""``evidence-stage export-atif``: a drop-in for ``gym eval export --format atif``.

Whole-file, all-or-nothing export of an already-enriched rollouts file, with 0.7.0's refusals,
messages and exit codes: configuration errors exit 2 (argparse), every export refusal prints
``Error: <0.7.0 text>`` and exits 1, success prints 0.7.0's two lines. Nothing is published
unless every row converts; locally the files appear at once (staged folder + rename).
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flows.cli.options import add_storage_options, storage_options_of
from flows.params.storage import url_argument

if TYPE_CHECKING:
    from tasks.storage import Location

EXIT_REFUSED = 1


def register(subcommands: Any) -> None:
    parser = subcommands.add_parser(
        "export-atif", dropin=True, help="export an enriched rollouts file to ATIF v1.7 (gym eval export --format atif)"
    )
    parser.add_argument(
        "--rollouts", required=True, metavar="URL", type=url_argument, help="an enriched rollouts JSONL (a run's rollouts.jsonl)"
    )
    parser.add_argument(
        "--output-dir", required=True, metavar="URL", type=url_argument, help="folder to create for the ATIF files (must not exist)"
    )
    parser.add_argument("--session-id", required=True, help="the ATIF session id of every trajectory")
    parser.add_argument("--agent-version", required=True, help="the ATIF agent version of every trajectory")
    add_storage_options(parser)
    parser.set_defaults(handler=handle, parser=parser)


def _shown(location: Location, *, resolve: bool) -> str:
    """Paths as 0.7.0 prints them: rollouts resolved, output made absolute; URLs as given."""
    if not location.is_local:
        return location.url
    path = Path(location.url.removeprefix("file://")).expanduser()
    return str(path.resolve() if resolve else path.absolute())


def _refuse(message: str) -> int:
    print(f"Error: {message}", file=sys.stderr)
    return EXIT_REFUSED


def _publish(output: Location, files: list[tuple[str, bytes]]) -> bool:
    """Write every file, or nothing; False when the output appeared meanwhile."""
    if not output.is_local:
        if output.exists():
            return False
        for name, data in files:
            output.child(name).write_bytes(data)
        return True
    target = Path(output.path)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.parent / f".{target.name}.{secrets.token_hex(8)}"
    staging.mkdir()  # mode 0777 less the umask, as the published folder's (mkdtemp would make it 0700)
    try:
        for name, data in files:
            (staging / name).write_bytes(data)
        if os.path.lexists(target):
            return False
        os.rename(staging, target)
        return True
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def handle(args: argparse.Namespace) -> int:
    from evidence import (
        AtifExportError,
        Exporter,
        config_error_message,
        export_rollouts,
        output_created_message,
        output_exists_message,
        rollouts_not_found_message,
        success_lines,
    )
    from flows.execution.resolve import package_version
    from tasks.attempts.context import EXPORTER_NAME
    from tasks.storage import Location, StorageError

    for field in ("session_id", "agent_version"):
        message = config_error_message(field, getattr(args, field))
        if message is not None:
            args.parser.error(message)
    options = storage_options_of(args)
    rollouts, output = Location(args.rollouts, options), Location(args.output_dir, options)
    if not rollouts.exists() or rollouts.is_dir():
        return _refuse(rollouts_not_found_message(_shown(rollouts, resolve=True)))
    shown_output = _shown(output, resolve=False)
    if output.exists() or (output.is_local and os.path.lexists(output.path)):
        return _refuse(output_exists_message(shown_output))
    exporter = Exporter(name=EXPORTER_NAME, version=package_version())
    try:
        files = export_rollouts(rollouts.read_bytes(), session_id=args.session_id, agent_version=args.agent_version, exporter=exporter)
    except AtifExportError as exc:
        return _refuse(exc.message)
    try:
        published = _publish(output, files)
    except (OSError, StorageError) as exc:  # named by the output asked for, not the staging folder beside it
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else getattr(exc, "message", str(exc))
        return _refuse(f"Output directory cannot be created: {shown_output}: {reason}")
    if not published:
        return _refuse(output_created_message(shown_output))
    for line in success_lines(len(files) - 1, shown_output):
        print(line)
    return 0
