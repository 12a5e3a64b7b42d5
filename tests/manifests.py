"""A finished run's typed manifest, for tests that hand-make the evidence its readers take."""

from __future__ import annotations

from typing import Any

from evidence import FinishedRun, RecordedParams, RunCounts, RunIdentity


def finished_run(
    job_id: str = "job",
    run_id: str = "r1",
    config_fingerprint: str = "f1",
    finished_at: str = "2026-01-01T00:01:00+00:00",
    **parameters: Any,
) -> FinishedRun:
    """A full run of one rollouts file; ``parameters`` override the recorded defaults (``manifest_bytes`` writes it)."""
    recorded = {
        "rollouts": "memory://job/rollouts.jsonl",
        "capture_dir": "memory://job/model-calls",
        "failures": None,
        "job_id": job_id,
        "session_id": "s",
        "agent_version": "",
        "ignored_checks": [],
        "atif_all_or_nothing": False,
        "rollout_ids": [],
        "rollout_glob": None,
        **parameters,
    }
    return FinishedRun(
        run=RunIdentity(
            run_id, job_id, f"memory://out/{job_id}/runs/{run_id}", "full", "0.1.0", "2026-01-01T00:00:00+00:00", finished_at, False
        ),
        shards=[],
        parameters=RecordedParams.model_validate(recorded),
        config_fingerprint=config_fingerprint,
        inputs=FinishedRun.Inputs(fingerprint="i1"),
        counts=RunCounts(0, {}, {}, 0, 0, 0, 0, 0, {}, 0),
    )


def manifest_bytes(finished: FinishedRun) -> bytes:
    """A ``manifest.json`` that its readers take as ``finished`` (the keys no reader types are left out)."""
    return finished.model_dump_json().encode()
