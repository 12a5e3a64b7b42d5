"""Terminal presentation of a run: a progress bar during the fan-out and a summary table after."""

from __future__ import annotations

import functools
import json
import logging
import os
import shlex
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from types import FrameType
from typing import Any, cast

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from flows.params.stage import StageParams, TaskRunnerKind

console = Console(stderr=True)

QUIET_LOGS = {"PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING", "DASK_LOGGING__DISTRIBUTED": "warning"}
"""What a command prints of Prefect's and Dask's logs unless ``--verbose``: their warnings and errors.

Prefect printed every INFO record of a run (a line per task run), and a local Dask cluster 33
``distributed.*`` INFO lines even at ``PREFECT_LOGGING_LEVEL=WARNING``, which Dask does not read.
Only the console handler is quieted: the server still gets every record. Set in the environment,
before either library loads, so the processes a run starts (attempt workers, Dask workers, the
temporary server) inherit it; a value the user set is kept.
"""


def quiet_logs(verbose: bool) -> None:
    """Keep Prefect's and Dask's INFO logs off the terminal unless ``verbose`` (call before either is imported)."""
    if not verbose:
        for name, value in QUIET_LOGS.items():
            os.environ.setdefault(name, value)


EXIT_GATE_FAILED = 3
EXIT_INTERRUPTED = 130
"""128 + SIGINT, as a shell reports a command ended by Ctrl-C."""


def run_with_progress(params: StageParams, argv: Sequence[str] = (), as_json: bool = False) -> int:
    """Run the flow with a live progress bar; print where the outputs are and what they hold
    (tables, or with ``as_json`` one JSON line for a script: ``print_json``).

    The run id and directory are printed (stderr) as soon as the run is claimed. A failing
    quality gate still prints the run (it was written), then the gate's reason as one line on
    stderr, and exits 3. A Ctrl-C prints one line, the command that resumes the run (``argv``:
    the command line as given, for the resume command), and exits 130.
    """
    if params.task_runner is TaskRunnerKind.process:
        from flows.execution.forkserver import start_forkserver

        start_forkserver(params)  # boots while Prefect is imported below
    from flows.execution.ephemeral import shield_ephemeral_server
    from flows.execution.progress import add_listener, expected_attempts, remove_listener
    from flows.execution.resolve import claims_told_to, notes_told_to, preflight
    from flows.execution.snapshots import GateBreached
    from flows.stage import stage_flow
    from tasks.publish.gate import GateFailed

    shards = preflight(params)
    shield_ephemeral_server()

    bar = Progress(TextColumn("attempts"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True)
    # a subset's total (a resumed run's may be one) is known once scanned, a followed job's as it grows
    whole_job = not (params.rollout_ids or params.rollout_glob or params.resume or params.follow)
    handle = bar.add_task("attempts", total=expected_attempts(shards) if whole_job and console.is_terminal else None)
    claimed: list[str] = []

    def listener(done: int, total: int) -> None:
        bar.update(handle, completed=done, total=total)

    def told(run_id: str, run_dir: Any) -> None:
        claimed.append(run_id)
        said(f"run {run_id}: {run_dir.display}")

    def said(text: str) -> None:
        console.print(f"evidence-stage: {text}", markup=False, highlight=False, soft_wrap=True)

    add_listener(listener)
    try:
        live = bar if console.is_terminal else nullcontext()  # off a terminal, rich's bar only left a blank line
        with live, heartbeat_thread_not_joined(), claims_told_to(told), notes_told_to(said), quiet_console():
            result = cast(dict[str, Any], stage_flow(params))  # a Failed state it returns raises here
    except GateFailed as failed:
        (print_json if as_json else print_summary)(failed.result)
        console.print(f"evidence-stage: {failed}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_GATE_FAILED
    except GateBreached as breached:  # a followed job's snapshot: the run is kept, unfinished
        line = f"evidence-stage: {breached}; resume it with: {resume_command(argv, breached.result['run_id'])}"
        console.print(line, markup=False, highlight=False, soft_wrap=True)
        return EXIT_GATE_FAILED
    except Exception as exc:
        raise _where_no_space(exc, shards, argv, claimed) from exc
    except KeyboardInterrupt:
        if claimed:
            line = f"evidence-stage: interrupted; run {claimed[-1]} is kept, resume it with: {resume_command(argv, claimed[-1])}"
        else:
            line = "evidence-stage: interrupted before a run was claimed: nothing was written"
        print(line, file=sys.stderr)  # one plain line to copy: no markup, no wrapping
        return EXIT_INTERRUPTED
    finally:
        remove_listener(listener)
    (print_json if as_json else print_summary)(result)
    return 0


def _where_no_space(exc: Exception, shards: Sequence[Any], argv: Sequence[str], claimed: list[str]) -> Exception:
    """``exc`` itself, or for a full disk the one line that says where, how much the run needs,
    and how to resume it (``flows.execution.nospace``)."""
    from flows.execution.nospace import NoSpace, no_space, no_space_reason

    error = no_space(exc)
    if error is None:
        return exc
    kept = f"; run {claimed[-1]} is kept, resume it with: {resume_command(argv, claimed[-1])}" if claimed else ""
    return NoSpace(no_space_reason(error, shards) + kept)


def resume_command(argv: Sequence[str], run_id: str) -> str:
    """The command line that resumes ``run_id``: the one given (``argv``, after ``evidence-stage``) without
    ``--run-id``/``--resume``, then ``--resume RUN_ID``."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--run-id", "--resume"):
            skip = True
        elif not arg.startswith(("--run-id=", "--resume=")):
            kept.append(arg)
    return shlex.join(["evidence-stage", *kept, "--resume", run_id])


@contextmanager
def quiet_console() -> Iterator[None]:
    """Prefect's console logging leaves out what the CLI says itself (the server still gets every record).

    A refusal's log line (``REFUSAL``) is the CLI's error line, and so are the records of a full
    disk (``run_with_progress`` says where, in one line); after a Ctrl-C nothing more is
    printed: Prefect reported the interrupt as a crash, with the interrupted call's traceback
    (40 lines for one Ctrl-C), and the CLI says what happened in one line (``run_with_progress``).
    """
    from flows.execution.nospace import about_no_space
    from flows.execution.resolve import REFUSAL

    interrupted = False

    def muted(record: logging.LogRecord) -> bool:
        return not interrupted and not getattr(record, REFUSAL, False) and not about_no_space(record)

    def on_interrupt(_signum: int, _frame: FrameType | None) -> None:
        nonlocal interrupted
        interrupted = True
        raise KeyboardInterrupt

    handlers = _prefect_console_handlers()
    for handler in handlers:
        handler.addFilter(muted)
    in_main = threading.current_thread() is threading.main_thread()  # only the main thread sets signal handlers
    previous = signal.signal(signal.SIGINT, on_interrupt) if in_main else None
    try:
        yield
    finally:
        if in_main:
            signal.signal(signal.SIGINT, previous)
        for handler in handlers:
            handler.removeFilter(muted)


def _prefect_console_handlers() -> list[logging.Handler]:
    """The handlers that print Prefect's log records on the terminal (its API handler is left alone)."""
    from prefect.logging.handlers import PrefectConsoleHandler

    loggers = [logging.getLogger()] + [item for item in logging.Logger.manager.loggerDict.values() if isinstance(item, logging.Logger)]
    return list({id(h): h for logger in loggers for h in logger.handlers if isinstance(h, PrefectConsoleHandler)}.values())


@contextmanager
def heartbeat_thread_not_joined() -> Iterator[None]:
    """A flow run called here returns as soon as its final state is reported.

    Prefect 3.9's synchronous flow engine joins its heartbeat thread on exit, and that thread
    notices the stop only between one-second sleeps: every CLI run waited up to a second (0.58 s
    measured on the example job) after its work was done. The thread is a daemon that exits at
    its next wake-up, and Prefect's own asynchronous engine does not join it either.
    """
    import prefect.flow_engine as engine

    original = engine._send_heartbeats  # noqa: SLF001  # Prefect has no public switch for the join
    engine._send_heartbeats = functools.partial(original, join_on_exit=False)  # noqa: SLF001
    try:
        yield
    finally:
        engine._send_heartbeats = original  # noqa: SLF001


UNWRAPPED_WIDTH = 10_000
"""The width a console off a terminal assumes: rich's 80 columns wrapped URLs and cut ids with "…"."""


def stdout_console() -> Console:
    """A console on stdout; off a terminal (a pipe, a CI log) nothing is wrapped or cut, tables are as wide as they need."""
    out = Console()
    return out if out.is_terminal else Console(width=UNWRAPPED_WIDTH)


def print_json(result: dict[str, Any]) -> None:
    """The flow's result as one JSON line on stdout: ``run_id``, ``run_dir`` (its URL),
    ``already_complete``, and for a run that ran ``counts`` (verdicts among them), ``scores``
    (each group's key metrics raw and clean) and ``gate`` (``gate.json``; null for an ungated run)."""
    print(json.dumps(result, separators=(",", ":")), flush=True)  # the line a script reads


def print_summary(result: dict[str, Any]) -> None:
    """Where the run is and its headline counts (stdout, so scripts can capture it)."""
    out = stdout_console()
    if result.get("already_complete"):
        out.print(f"run {result['run_id']} is already complete: {result['run_dir']}", soft_wrap=True, markup=False, highlight=False)
        return
    counts = result["counts"]
    table = Table(show_header=True)  # the title on a line of its own: a table's title wraps to the table's width
    table.add_column("what")
    table.add_column("count", justify="right")
    for status, n in counts["by_status"].items():
        table.add_row(f"attempts {status}", str(n))
    for source, n in counts["rows"].items():
        table.add_row(f"rows written ({source})", str(n))
    for verdict, n in sorted(counts["verdicts"].items()):
        table.add_row(f"verdict {verdict}", str(n))
    table.add_row("ATIF files", str(counts["atif_files"]))
    table.add_row("ATIF rejections", str(counts["atif_rejections"]))
    table.add_row("orphan captures", str(counts["orphans"]))
    table.add_row("skipped input lines", str(counts["skipped_lines"]))
    table.add_row("repairs", str(counts["repairs"]))
    out.print(f"evidence-stage run {result['run_id']}", soft_wrap=True, markup=False, highlight=False)
    out.print(table)
    if result.get("scores"):
        out.print(scores_table(result["scores"]))
    if result.get("follow_ended"):
        out.print(f"followed until: {result['follow_ended']}", soft_wrap=True, markup=False, highlight=False)
    out.print(f"outputs: {result['run_dir']}", soft_wrap=True, markup=False, highlight=False)


def scores_table(scores: dict[str, dict[str, dict[str, Any]]]) -> Table:
    """Each group's key metrics raw and clean (``evidence.key_metrics`` of scores.json); the group named once."""
    table = Table(title="scores: raw against clean (scores.json)", show_header=True)
    table.add_column("group")
    table.add_column("key metric")
    table.add_column("raw", justify="right")
    table.add_column("clean", justify="right")
    for group, metrics in scores.items():
        for index, (name, metric) in enumerate(metrics.items()):
            table.add_row(group if index == 0 else "", name, _score(metric["raw"]), _score(metric["clean"]))
    return table


def _score(value: Any) -> str:
    """A score as the summary shows it: 4 significant digits; n/a where 0.7.0 wrote none (every rollout masked)."""
    if value is None:
        return "n/a"
    return f"{value:.4g}" if isinstance(value, float) else str(value)
