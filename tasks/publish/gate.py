"""The quality gate bound to a run directory: measure the limits on the written run, write ``gate.json``.

``GateFailed`` is how a direct call of the job flow (the CLI, the batch's subflows) learns that
the run it wrote failed its gate: the flow run ends ``Failed`` with it as the state's data.
"""

from __future__ import annotations

from typing import Any

import orjson

from evidence import StageError, evaluate_gate
from tasks.publish.task import write_document
from tasks.rundir import GATE_FILE, RunPaths, read_document
from tasks.storage import Location


class GateFailed(StageError):
    """The run was written and published, but its quality gate failed; ``result`` is what the flow would return."""

    def __init__(self, reason: str, result: dict[str, Any]) -> None:
        super().__init__(reason)
        self.result = result


def judge_run(run_dir: Location, limits: dict[str, float], accounting: dict[str, Any]) -> dict[str, Any] | None:
    """The ``gate.json`` document of the run (also written there), or None for an ungated run.

    ``limits`` are named as ``flows.params.GateLimits.named`` names them. The score limits
    (``max_score_shift``, ``min_key_metric.<metric>``) are measured on ``scores.json``; a run
    without one (written before scores were) fails them unmeasured.
    """
    if not limits:
        return None
    paths = RunPaths(run_dir)
    summary = orjson.loads(paths.quality_summary.read_bytes())
    gate = evaluate_gate(limits, accounting, summary, read_document(paths.scores))
    write_document(run_dir, GATE_FILE, gate)
    return gate
