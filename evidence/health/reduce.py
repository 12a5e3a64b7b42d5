"""The reduce side of health: digests (file order) to 0.7.0's two report files.

Everything here depends only on the sequence of digests, never on how rows were grouped into
tasks or workers: the duplicate-identity post-pass, task checks, coverage, statistics, the
verdict order and the exact serialisation are all computed from the full sequence.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from evidence.health.digest import HEALTHY, UNHEALTHY, UNOBSERVED, RowDigest, finding
from evidence.health.encode import dumps_compact, dumps_indented
from evidence.health.registry import CHECK_IDS, ROLLOUT_CHECKS, TASK_CHECKS
from evidence.health.task_checks import Repeat

DUPLICATE_IDENTITY = "rollout_duplicate_identity"
VERDICTS = (HEALTHY, UNHEALTHY, UNOBSERVED)


@dataclass(frozen=True, slots=True)
class TaskResult:
    """One task's repeats, per-check outcome (None = unobserved) and flagged check ids."""

    task: int | str
    repeats: tuple[Repeat, ...]
    outcomes: dict[str, list[dict[str, Any]] | None]

    @property
    def flags(self) -> list[str]:
        return [check for check, details in self.outcomes.items() if details]


@dataclass(frozen=True, slots=True)
class HealthResult:
    """Final digests (input order, post-pass applied), task results and the ignored ids."""

    digests: tuple[RowDigest, ...]
    tasks: tuple[TaskResult, ...]
    ignored: tuple[str, ...]

    def verdict_lines(self) -> Iterator[str]:
        """``rollout_verdicts.jsonl`` line by line (each ends with a newline), sorted by identity."""
        for digest in sorted(self.digests, key=_verdict_order):
            yield dumps_compact(_verdict_row(digest)) + "\n"

    def verdicts_text(self) -> str:
        return "".join(self.verdict_lines())

    def summary(self) -> dict[str, Any]:
        """``quality_summary.json`` as a dict, keys in 0.7.0's order."""
        return {
            "run": {
                "ignored_checks": sorted(self.ignored),
                "artifacts": {
                    "records": len(self.digests),
                    "captures": sum(d.stats.capture_observed for d in self.digests),
                    "coverage": self._coverage(),
                },
                "verdicts": {verdict: sum(d.verdict == verdict for d in self.digests) for verdict in VERDICTS},
                "issues": self._issues(),
                "stats": _run_stats(self.digests),
            },
            "tasks": _task_entries(self.tasks),
        }

    def summary_text(self) -> str:
        """The exact file text: 2-space indentation, raw UTF-8, no trailing newline."""
        return dumps_indented(self.summary())

    def _coverage(self) -> dict[str, dict[str, int]]:
        coverage = {check: Counter({"evaluated": 0, "unobserved": 0, "ignored": 0}) for check in CHECK_IDS}
        for digest in self.digests:
            for spec in ROLLOUT_CHECKS:
                coverage[spec.id][_state(spec.id in self.ignored, spec.id in digest.unobserved)] += 1
        for task in self.tasks:
            for spec in TASK_CHECKS:
                unobserved = spec.id in task.outcomes and task.outcomes[spec.id] is None
                coverage[spec.id][_state(spec.id in self.ignored, unobserved)] += 1
        return {check: dict(counts) for check, counts in coverage.items()}

    def _issues(self) -> dict[str, int]:
        issues = dict.fromkeys(CHECK_IDS, 0)
        for digest in self.digests:
            for item in digest.findings:
                issues[item["check"]] += 1
        for task in self.tasks:
            for check, details in task.outcomes.items():
                issues[check] += len(details or ())
        return issues


def reduce_digests(digests: Iterable[RowDigest], ignored: Collection[str]) -> HealthResult:
    """Apply the duplicate-identity post-pass, then the task checks, to digests in file order."""
    rows = tuple(digests)
    if DUPLICATE_IDENTITY not in ignored:
        rows = _flag_duplicates(rows)
    return HealthResult(rows, _task_results(rows, ignored), tuple(ignored))


def _flag_duplicates(digests: tuple[RowDigest, ...]) -> tuple[RowDigest, ...]:
    """Every member of an identity group of two or more gets a finding appended."""
    sizes = Counter(digest.identity_key for digest in digests)
    return tuple(
        digest.with_finding(finding(DUPLICATE_IDENTITY, None, {"duplicate_count": sizes[digest.identity_key]}))
        if sizes[digest.identity_key] > 1 else digest
        for digest in digests
    )


def _task_results(digests: tuple[RowDigest, ...], ignored: Collection[str]) -> tuple[TaskResult, ...]:
    grouped: dict[int | str, dict[int | str, list[RowDigest]]] = {}
    for digest in digests:
        grouped.setdefault(digest.task, {}).setdefault(digest.rollout, []).append(digest)
    results = []
    for task, by_rollout in grouped.items():
        repeats = tuple(Repeat.merge(copies) for copies in by_rollout.values())
        outcomes = {spec.id: spec.run(repeats) for spec in TASK_CHECKS if spec.id not in ignored}
        results.append(TaskResult(task, repeats, outcomes))
    return tuple(results)


def _task_entries(tasks: Iterable[TaskResult]) -> dict[str, dict[str, Any]]:
    """Keyed by ``str(task)``: ints first in string order, then strings; a clash overwrites."""
    entries: dict[str, dict[str, Any]] = {}
    for task in sorted(tasks, key=lambda t: (isinstance(t.task, str), str(t.task))):
        verdicts = Counter(repeat.verdict for repeat in task.repeats)
        entries[str(task.task)] = {
            "repeats": len(task.repeats),
            **{verdict: verdicts[verdict] for verdict in VERDICTS},
            "flags": task.flags,
        }
    return entries


def _run_stats(digests: tuple[RowDigest, ...]) -> dict[str, Any]:
    by_status: Counter[str] = Counter()
    for digest in digests:
        by_status.update(digest.stats.errors_by_status)
    stats = [digest.stats for digest in digests]
    return {
        "model_call_errors": {
            "total": sum(s.model_call_errors for s in stats),
            "by_status": dict(sorted(by_status.items())),
            "rollouts_affected": sum(s.model_call_errors > 0 for s in stats),
            "ended_on_error": sum(s.ended_on_error for s in stats),
        },
        "duplicated_calls": {
            "replayed": sum(s.duplicated_calls for s in stats),
            "rollouts": sum(s.duplicated_calls > 0 for s in stats),
        },
        "tokens": {
            "prompt": sum(s.transcript_prompt for s in stats),
            "completion": sum(s.transcript_completion for s in stats),
            "capture_prompt": sum(s.capture_prompt for s in stats),
            "capture_completion": sum(s.capture_completion for s in stats),
        },
    }


def _state(ignored: bool, unobserved: bool) -> str:
    return "ignored" if ignored else "unobserved" if unobserved else "evaluated"


def _verdict_row(digest: RowDigest) -> dict[str, Any]:
    row = {
        "_ng_task_index": digest.task,
        "_ng_rollout_index": digest.rollout,
        "rollout_id": digest.rollout_id,
        "verdict": digest.verdict,
        "findings": list(digest.findings),
        "unobserved": list(digest.unobserved),
    }
    if digest.stage is not None:
        row["stage_index"] = digest.stage
    return row


def _verdict_order(digest: RowDigest) -> tuple[tuple[int, Any], ...]:
    """Ints first (numerically), then everything else by string form; a null stage is "None"."""
    return tuple(
        (0, part) if isinstance(part, int) else (1, str(part))
        for part in (digest.task, digest.rollout, digest.stage)
    )


def health_report_text(summary: dict[str, Any], summary_path: str) -> str:
    """The two-line human report 0.7.0's CLI prints (no trailing newline)."""
    verdicts = summary["run"]["verdicts"]
    ignored = summary["run"]["ignored_checks"]
    counts = f"{verdicts[HEALTHY]} healthy, {verdicts[UNHEALTHY]} unhealthy, {verdicts[UNOBSERVED]} unobserved"
    suffix = f" (ignored: {', '.join(ignored)})" if ignored else ""
    total = sum(verdicts.values())
    return f"Rollout health: {total} checked, {counts}{suffix}\nQuality summary: {summary_path}"
