"""Terminal presentation of a run: a progress bar during the fan-out and a summary table after."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from flows.params.stage import StageParams, TaskRunnerKind

console = Console(stderr=True)


EXIT_GATE_FAILED = 3


def run_with_progress(params: StageParams) -> int:
    """Run the flow with a live progress bar; print where the outputs are and what they hold.

    A failing quality gate still prints the run (it was written), then the gate's reason as one
    line on stderr, and exits 3.
    """
    if params.task_runner is TaskRunnerKind.process:
        from flows.execution.forkserver import start_forkserver

        start_forkserver(params)  # boots while Prefect is imported below
    from flows.execution.progress import add_listener, remove_listener
    from flows.execution.resolve import preflight
    from flows.stage import stage_flow
    from tasks.publish.gate import GateFailed

    preflight(params)

    bar = Progress(TextColumn("attempts"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True)
    handle = bar.add_task("attempts", total=None)

    def listener(done: int, total: int) -> None:
        bar.update(handle, completed=done, total=total)

    add_listener(listener)
    try:
        with bar, heartbeat_thread_not_joined():
            result = stage_flow(params)
    except GateFailed as failed:
        print_summary(failed.result)
        console.print(f"evidence-stage: {failed}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_GATE_FAILED
    finally:
        remove_listener(listener)
    print_summary(result)
    return 0


@contextmanager
def heartbeat_thread_not_joined() -> Iterator[None]:
    """A flow run called here returns as soon as its final state is reported.

    Prefect 3.9's synchronous flow engine joins its heartbeat thread on exit, and that thread
    notices the stop only between one-second sleeps: every CLI run waited up to a second (0.58 s
    measured on the example job) after its work was done. The thread is a daemon that exits at
    its next wake-up, and Prefect's own asynchronous engine does not join it either.
    """
    import prefect.flow_engine as engine

    original = engine._send_heartbeats
    engine._send_heartbeats = functools.partial(original, join_on_exit=False)
    try:
        yield
    finally:
        engine._send_heartbeats = original


def print_summary(result: dict[str, Any]) -> None:
    """Where the run is and its headline counts (stdout, so scripts can capture it)."""
    out = Console()
    if result.get("already_complete"):
        out.print(f"run {result['run_id']} is already complete: {result['run_dir']}")
        return
    counts = result["counts"]
    table = Table(title=f"evidence-stage run {result['run_id']}", show_header=True)
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
    out.print(table)
    out.print(f"outputs: {result['run_dir']}")
