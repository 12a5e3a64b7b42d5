"""The run's ATIF outputs: each accepted file written as it is accepted (or held, for an
all-or-nothing run), the rejections, 0.7.0's manifest or error.txt."""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from evidence import (
    AtifAcceptance,
    AtifFile,
    AtifRefusal,
    AttemptOutcome,
    dumps,
)
from tasks.attempts.context import RunContext
from tasks.discover.refs import AttemptRef
from tasks.storage import Location, atomic_writer
from tasks.storage.concurrent import WriteBehind
from tasks.storage.spill import Spill

# Accepted ATIF files written behind the main pass on an object store: this many at once, this many bytes waiting.
# Small: at 32 MiB this budget filled only on large jobs and was 7 MiB of the flow process's
# peak at 20,000 attempts (tests/reliability/test_memory.py compares with 2,000).
ATIF_WRITE_WINDOW = 8


ATIF_WRITE_BUDGET_BYTES = 8 * 1024 * 1024


@dataclass(slots=True)
class AtifOutputs:
    """Where the ATIF decisions (``evidence.folds.AtifAcceptance``) go, in input order.

    An accepted file is final when it is decided, so it is written at once (on an object store
    behind the pass, a few at a time; locally in the pass, ``io_window``); only an all-or-nothing
    run, which may still publish none, spills the
    accepted files to local disk until its last row is seen, with the texts its replay of
    0.7.0's batch export recorded (its ``error.txt`` says them).
    """

    acceptance: AtifAcceptance
    accept: Callable[[AtifFile], None]  # each accepted main attempt's file, input order
    manifest: Spill[bytes]  # manifest lines, input order
    rejections: Spill[dict[str, Any]]  # {"line", "rollout_id", "error"}, input order
    held: Spill | None = None  # an all-or-nothing run's accepted files
    batch_refused: Spill | None = None  # an all-or-nothing run's recorded texts
    writes: WriteBehind | None = None  # the accepted files being written (any other run)
    accepted: int = 0

    @classmethod
    def open(cls, stack: ExitStack, folder: Location, all_or_nothing: bool) -> AtifOutputs:
        """Files written into ``folder``, or held until the end for an all-or-nothing run."""
        manifest: Spill[bytes] = stack.enter_context(Spill())
        rejections: Spill[dict[str, Any]] = stack.enter_context(Spill())
        acceptance = AtifAcceptance(all_or_nothing)
        if all_or_nothing:
            files: Spill[AtifFile] = stack.enter_context(Spill(batch=1))  # a file can be megabytes
            return cls(acceptance, files.add, manifest, rejections, held=files, batch_refused=stack.enter_context(Spill()))
        writes = stack.enter_context(WriteBehind(window=ATIF_WRITE_WINDOW, remote=not folder.is_local, budget=ATIF_WRITE_BUDGET_BYTES))

        def write(accepted: AtifFile) -> None:
            writes.submit(functools.partial(_write_file, folder, accepted), accepted.size)

        return cls(acceptance, write, manifest, rejections, writes=writes)

    def decide(self, attempt: AttemptRef, outcome: AttemptOutcome, atif: AtifFile | AtifRefusal) -> tuple[str | None, str | None]:
        """Decide a main row; its file name (accepted) or refusal text (rejected), for its tables and viewer."""
        decision = self.acceptance.decide(attempt.out_line, outcome.rollout_id, atif)
        if decision.batch_refusal is not None and self.batch_refused is not None:
            self.batch_refused.add(decision.batch_refusal)
        if decision.rejection is not None:
            self.rejections.add(decision.rejection)
            error = decision.rejection["error"]
            return None, error if isinstance(error, str) else str(error)
        assert decision.accepted is not None
        self.accept(decision.accepted)
        self.accepted += 1
        self.manifest.add(decision.accepted.manifest_line)
        return decision.accepted.name, None


def _write_file(folder: Location, accepted: AtifFile) -> None:
    folder.child(accepted.name).write_chunks(accepted.chunks)


def write_atif(ctx: RunContext, atif: AtifOutputs) -> bool:
    """The rejections and the manifest; for an all-or-nothing run, its held files, or only error.txt when 0.7.0's batch export fails."""
    paths = ctx.paths
    folder = paths.atif
    if atif.writes is not None:
        atif.writes.drain()  # the manifest lists only files that are written
    paths.atif_rejections.write_chunks(lambda: (dumps(r) + b"\n" for r in atif.rejections))
    if atif.held is not None and atif.batch_refused is not None:
        error = atif.acceptance.batch_error(list(atif.batch_refused))
        if error is not None:
            paths.atif_error.write_bytes(error.encode())
            return False

        with WriteBehind(window=ATIF_WRITE_WINDOW, remote=not folder.is_local, budget=ATIF_WRITE_BUDGET_BYTES) as writes:
            for held in atif.held:
                writes.submit(functools.partial(_write_file, folder, held), held.size)
    with atomic_writer(paths.atif_manifest) as out:
        for entry in atif.manifest:
            out.write(entry + b"\n")
    return True
