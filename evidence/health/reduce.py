"""The reduce side of health: digests (file order) to 0.7.0's two report files.

Everything here depends only on the sequence of digests, never on how rows were grouped into
tasks or workers. The reduce is two streaming passes so a caller can keep the digests on disk:
``identity_sizes`` counts identities (the duplicate-identity post-pass needs the whole file),
then ``HealthFold.add`` takes each digest in file order and keeps only counts and one merged
``Repeat`` per (task, rollout index). Verdict lines are sorted by ``verdict_order``; the
caller chooses where (``reduce_digests`` sorts in memory).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from evidence.health.digest import HEALTHY, UNHEALTHY, UNOBSERVED, RowDigest, RowStats, finding
from evidence.health.registry import CHECK_IDS, ROLLOUT_CHECKS, TASK_CHECKS
from evidence.health.task_checks import Repeat
from evidence.jsonl import dumps

DUPLICATE_IDENTITY = "rollout_duplicate_identity"
VERDICTS = (HEALTHY, UNHEALTHY, UNOBSERVED)

IdentityKey = tuple[int | str | None, int | str, int | str]


@dataclass(frozen=True, slots=True)
class TaskResult:
    """One task's repeats, per-check outcome (None = unobserved) and flagged check ids."""

    task: int | str
    repeats: tuple[Repeat, ...]
    outcomes: dict[str, list[dict[str, Any]] | None]

    @property
    def flags(self) -> list[str]:
        return [check for check, details in self.outcomes.items() if details]


def identity_sizes(digests: Iterable[RowDigest]) -> Counter[IdentityKey]:
    """Pass one: how many rows share each identity (the duplicate-identity post-pass input)."""
    return Counter(digest.identity_key for digest in digests)


class HealthFold:
    """Pass two: digests in file order in, ``quality_summary.json`` out.

    Holds counters and one merged ``Repeat`` per (task, rollout index), never the digests, so a
    caller that streams digests from disk needs memory for the tasks, not for the rows.
    """

    def __init__(self, ignored: Collection[str], sizes: Mapping[IdentityKey, int]) -> None:
        self._ignored = tuple(ignored)
        self._sizes = {} if DUPLICATE_IDENTITY in ignored else sizes
        self._records = 0
        self._captures = 0
        self._coverage = {check: Counter({"evaluated": 0, "unobserved": 0, "ignored": 0}) for check in CHECK_IDS}
        self._verdicts = dict.fromkeys(VERDICTS, 0)
        self._issues = dict.fromkeys(CHECK_IDS, 0)
        self._stats = _RunStats()
        self._repeats: dict[int | str, dict[int | str, Repeat]] = {}
        self._shared: dict[Repeat, Repeat] = {}  # every distinct Repeat once (a few: verdict, observed, calls), not one per rollout

    def add(self, digest: RowDigest) -> RowDigest:
        """Fold one digest; return it as reported (with its duplicate-identity finding, if any)."""
        size = self._sizes.get(digest.identity_key, 1)
        if size > 1:
            digest = digest.with_finding(finding(DUPLICATE_IDENTITY, None, {"duplicate_count": size}))
        self._records += 1
        self._captures += digest.stats.capture_observed
        for spec in ROLLOUT_CHECKS:
            self._coverage[spec.id][_state(spec.id in self._ignored, spec.id in digest.unobserved)] += 1
        self._verdicts[digest.verdict] += 1
        for item in digest.findings:
            self._issues[item["check"]] += 1
        self._stats.add(digest.stats)
        by_rollout = self._repeats.setdefault(digest.task, {})
        known = by_rollout.get(digest.rollout)
        repeat = Repeat.of(digest) if known is None else known.merged(digest)
        by_rollout[digest.rollout] = self._shared.setdefault(repeat, repeat)
        return digest

    @property
    def verdicts(self) -> dict[str, int]:
        """Rows per verdict so far (duplicate-identity findings included)."""
        return dict(self._verdicts)

    def summary(self) -> dict[str, Any]:
        """``quality_summary.json`` as a dict, keys in 0.7.0's order."""
        tasks = self._task_results()
        coverage = {check: Counter(counts) for check, counts in self._coverage.items()}
        issues = dict(self._issues)
        for task in tasks:
            for spec in TASK_CHECKS:
                unobserved = spec.id in task.outcomes and task.outcomes[spec.id] is None
                coverage[spec.id][_state(spec.id in self._ignored, unobserved)] += 1
            for check, details in task.outcomes.items():
                issues[check] += len(details or ())
        return {
            "run": {
                "ignored_checks": sorted(self._ignored),
                "artifacts": {
                    "records": self._records,
                    "captures": self._captures,
                    "coverage": {check: dict(counts) for check, counts in coverage.items()},
                },
                "verdicts": self.verdicts,
                "issues": issues,
                "stats": self._stats.summary(),
            },
            "tasks": _task_entries(tasks),
        }

    def summary_text(self) -> str:
        """The exact file text: 2-space indentation, raw UTF-8, no trailing newline."""
        return dumps(self.summary(), indent=True).decode()

    def _task_results(self) -> list[TaskResult]:
        results = []
        for task, by_rollout in self._repeats.items():
            repeats = tuple(by_rollout.values())
            outcomes = {}
            for spec in TASK_CHECKS:
                if spec.id not in self._ignored:
                    assert spec.run is not None, "only the runner-level rollout checks have no rule function"
                    outcomes[spec.id] = spec.run(repeats)
            results.append(TaskResult(task, repeats, outcomes))
        return results


class _RunStats:
    """Run-level statistics, summed left to right in file order."""

    def __init__(self) -> None:
        self.errors = self.affected = self.ended_on_error = 0
        self.replayed = self.replaying_rollouts = 0
        self.prompt = self.completion = self.capture_prompt = self.capture_completion = 0
        self.by_status: Counter[str] = Counter()

    def add(self, stats: RowStats) -> None:
        self.by_status.update(stats.errors_by_status)
        self.errors += stats.model_call_errors
        self.affected += stats.model_call_errors > 0
        self.ended_on_error += stats.ended_on_error
        self.replayed += stats.duplicated_calls
        self.replaying_rollouts += stats.duplicated_calls > 0
        self.prompt += stats.transcript_prompt
        self.completion += stats.transcript_completion
        self.capture_prompt += stats.capture_prompt
        self.capture_completion += stats.capture_completion

    def summary(self) -> dict[str, Any]:
        return {
            "model_call_errors": {
                "total": self.errors,
                "by_status": dict(sorted(self.by_status.items())),
                "rollouts_affected": self.affected,
                "ended_on_error": self.ended_on_error,
            },
            "duplicated_calls": {"replayed": self.replayed, "rollouts": self.replaying_rollouts},
            "tokens": {
                "prompt": self.prompt,
                "completion": self.completion,
                "capture_prompt": self.capture_prompt,
                "capture_completion": self.capture_completion,
            },
        }


@dataclass(frozen=True, slots=True)
class HealthResult:
    """Both report files of an in-memory reduce: the summary and the sorted verdict lines."""

    summary_value: dict[str, Any]
    lines: tuple[str, ...]

    def verdict_lines(self) -> Iterator[str]:
        """``rollout_verdicts.jsonl`` line by line (each ends with a newline), sorted by identity."""
        return iter(self.lines)

    def verdicts_text(self) -> str:
        return "".join(self.lines)

    def summary(self) -> dict[str, Any]:
        return self.summary_value

    def summary_text(self) -> str:
        """The exact file text: 2-space indentation, raw UTF-8, no trailing newline."""
        return dumps(self.summary_value, indent=True).decode()


def reduce_digests(digests: Iterable[RowDigest], ignored: Collection[str]) -> HealthResult:
    """Both passes over digests held in memory (the drop-in command and small inputs)."""
    rows = list(digests)
    fold = HealthFold(ignored, identity_sizes(rows))
    reported = [fold.add(digest) for digest in rows]
    return HealthResult(fold.summary(), tuple(verdict_line(d) for d in sorted(reported, key=verdict_order)))


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


def _state(ignored: bool, unobserved: bool) -> str:
    return "ignored" if ignored else "unobserved" if unobserved else "evaluated"


def verdict_line(digest: RowDigest) -> str:
    """One ``rollout_verdicts.jsonl`` line (with its newline) for a digest as reported."""
    return dumps(_verdict_row(digest)).decode() + "\n"


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


def verdict_order(digest: RowDigest) -> tuple[tuple[int, Any], ...]:
    """Ints first (numerically), then everything else by string form; a null stage is "None"."""
    return tuple((0, part) if isinstance(part, int) else (1, str(part)) for part in (digest.task, digest.rollout, digest.stage))


def health_report_text(summary: dict[str, Any], summary_path: str) -> str:
    """The two-line human report 0.7.0's CLI prints (no trailing newline)."""
    verdicts = summary["run"]["verdicts"]
    ignored = summary["run"]["ignored_checks"]
    counts = f"{verdicts[HEALTHY]} healthy, {verdicts[UNHEALTHY]} unhealthy, {verdicts[UNOBSERVED]} unobserved"
    suffix = f" (ignored: {', '.join(ignored)})" if ignored else ""
    total = sum(verdicts.values())
    return f"Rollout health: {total} checked, {counts}{suffix}\nQuality summary: {summary_path}"
