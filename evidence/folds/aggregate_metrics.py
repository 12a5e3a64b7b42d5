"""``<stem>_aggregate_metrics.json`` as NeMo Gym 0.7.0 writes it, folded from score digests.

0.7.0 ends ``gym eval run`` by sending each environment-server group's stripped rows to that
server's ``/aggregate_metrics`` and writing the answers as one list. This fold reproduces the
default answer (``reward_profile.compute_aggregate_metrics``) from :class:`ScoreDigest` values,
one per main row in file order, so the reduce keeps a few numbers per rollout instead of rows.

Per group, in 0.7.0's order (each step can raise, and the first raise leaves the group out):

1. masking: a row is masked when its ``mask_sample`` is truthy, or when the caller masks it
   (health-gated scores); masked rows count only as coverage (``coverage/...`` keys, present
   only when something was masked) and in ``num_repeats``;
2. ``perf_summary``, over every row of the group, masked or not (the caller passes the
   group's block of ``perf_summary.json``, and its problems: a statistic 0.7.0 raises on);
3. a group whose rows are all masked publishes its coverage alone;
4. alignment: the scored rows by ``(task, rollout)`` key, which must be unique (``ValueError``
   naming the first duplicate) and must not repeat a masked row's key; then sorted;
5. the profile (:mod:`evidence.folds.profile`): per task, overall, per repeat;
6. ``key_metrics``: the overall ``mean/...`` values plus the coverage keys.

Entries are sorted by server; the label (``agent_ref.name``) is the agent's name when that name
belongs to one server only, else the server (0.7.0's ``label_runs``). A group left out becomes
a :class:`GroupRefusal` with 0.7.0's exception type and message (0.7.0 itself would abort the
whole file; the oracle, like us, leaves the group out).
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evidence.folds.digest import TASK_KEY, Scalar, ScoreDigest
from evidence.folds.packed import Layouts, PackedDigest, pack
from evidence.folds.profile import profile_rollouts
from evidence.jsonl import Streamed, dump_pieces, dumps

__all__ = ["AggregateMetrics", "AggregateMetricsFold", "GroupRefusal", "WrittenMetrics", "dumps_aggregate_metrics", "server_order"]

REFUSED = (ArithmeticError, AttributeError, LookupError, TypeError, ValueError)
"""What 0.7.0 raises on a group's numbers (an ImportError or a bug of ours is not one)."""


@dataclass(frozen=True, slots=True)
class GroupRefusal:
    """A group 0.7.0 raises on: left out of the document, listed in the run manifest."""

    group: Scalar
    error: str
    message: str

    def __str__(self) -> str:
        return f"aggregate metrics: group {self.group!r} left out: 0.7.0 raises {self.error}: {self.message}"


@dataclass(frozen=True, slots=True)
class AggregateMetrics:
    """The document (one entry per group, sorted by server) and the groups left out."""

    document: list[dict[str, Any]]
    refusals: tuple[GroupRefusal, ...]


class _Replayed(Exception):
    """An error 0.7.0 raises that we know by name only (a perf statistic's)."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error


class AggregateMetricsFold:
    """Score digests in file order in, the aggregate-metrics document out.

    Memory: the digests only, packed (``evidence.folds.packed``: their values, about 300 bytes
    per rollout); the tables are built per group when the document is made. One fold gives
    both documents of a run: ``write`` streams both, a group and a task entry at a time (a
    run's reduce: the documents hold every rollout's ``rollout_infos``, never held whole);
    ``result`` makes one whole, ``apply_masks=False`` ignoring the caller's masks (0.7.0's own
    file), else applying them (clean scores). Either way a group the caller's masks leave as
    it was is computed once for both.

    Example::

        fold = AggregateMetricsFold()
        for row, verdict in rows_and_verdicts:
            fold.add(score_digest(row), masked=verdict == "unhealthy")
        perf = perf_fold.document()
        raw, clean = fold.write(perf["groups"], perf_fold.problems, raw_file.write, clean_file.write)
        whole = dumps_aggregate_metrics(fold.result(perf["groups"], perf_fold.problems).document)
    """

    def __init__(self) -> None:
        self._groups: dict[Scalar, list[PackedDigest]] = {}
        self._layouts: Layouts = {}
        self._agents: dict[Scalar, Scalar | None] = {}
        # A group's metrics (or 0.7.0's error) by what decides them: its rows' masks and its
        # perf error. The clean document of a group in which health masked nothing is then
        # the raw one's, not computed twice (most groups of a healthy run).
        self._computed: dict[tuple[Scalar, tuple[bool, ...], tuple[str, str] | None], dict[str, Any] | GroupRefusal] = {}

    def add(self, digest: ScoreDigest | None, masked: bool = False) -> None:
        """One main row's digest (None: the row is in no group); ``masked`` masks it as if its
        ``mask_sample`` were true (it can only add masking)."""
        if digest is None:
            return
        self._groups.setdefault(digest.server, []).append(pack(digest, masked, self._layouts))
        self._agents.setdefault(digest.server, digest.agent)

    def write(
        self,
        perf_groups: Mapping[str, dict[str, Any] | None],
        perf_problems: Iterable[str],
        raw: Callable[[bytes], object],
        clean: Callable[[bytes], object],
    ) -> tuple[WrittenMetrics, WrittenMetrics]:
        """Both documents' bytes handed to ``raw`` (0.7.0's own file) and ``clean`` (masks applied)
        as they are made: ``dumps_aggregate_metrics`` of each :meth:`result`'s document, in pieces.

        One group at a time, and within a group one task entry at a time (each holds its
        rollouts' ``rollout_infos``), so memory holds one group's table, never a document; a
        group the masks leave as it was is computed once and its pieces go to both.
        """
        problems = list(perf_problems)
        labels = _labels(self._agents)
        outputs = _Output(raw), _Output(clean)
        for server in sorted(self._groups, key=server_order):
            perf_error = _perf_error(server, problems)
            perf = perf_groups.get(server) if isinstance(server, str) else None
            if any(row.extra and not row.masked for row in self._groups[server]):
                for output, apply_masks in zip(outputs, (False, True), strict=True):
                    self._write_group(server, labels[server], apply_masks, perf_error, perf, (output,))
            else:  # the caller's masks leave it as it is: computed once, its pieces written to both
                self._write_group(server, labels[server], False, perf_error, perf, outputs)
        for output in outputs:
            output.end()
        return outputs[0].written(), outputs[1].written()

    def _write_group(
        self,
        server: Scalar,
        label: Scalar,
        apply_masks: bool,
        perf_error: tuple[str, str] | None,
        perf: dict[str, Any] | None,
        outputs: tuple[_Output, ...],
    ) -> None:
        """One group's entry (or refusal) computed and written to ``outputs``; nothing of it kept but its headline."""
        metrics = _group_outcome(server, self._members(server, apply_masks), perf_error)
        if isinstance(metrics, GroupRefusal):
            for output in outputs:
                output.refusals.append(metrics)
            return
        entry = _entry(label, server, metrics, perf, Streamed(metrics["group_level_metrics"]))
        for output in outputs:
            output.begin(_headline(entry))
        for piece in dump_pieces(entry, indent=True, depth=1):
            for output in outputs:
                output.write(piece)

    def _members(self, server: Scalar, apply_masks: bool) -> list[tuple[PackedDigest, bool]]:
        return [(row, row.masked or (row.extra and apply_masks)) for row in self._groups[server]]

    def result(
        self,
        perf_groups: Mapping[str, dict[str, Any] | None] | None = None,
        perf_problems: Iterable[str] = (),
        *,
        apply_masks: bool = True,
    ) -> AggregateMetrics:
        """The document and its refusals.

        Args:
            perf_groups: ``perf_summary.json``'s ``groups`` (a group's block becomes its
                ``perf_summary``; a group missing from it, or None, has none).
            perf_problems: ``PerfSummaryFold.problems``; a group with one is left out, as
                0.7.0 raises on that statistic.
            apply_masks: honour the masks given to :meth:`add` (False: 0.7.0's own file).
        """
        perf_groups = perf_groups or {}
        problems = list(perf_problems)
        labels = _labels(self._agents)
        document: list[dict[str, Any]] = []
        refusals: list[GroupRefusal] = []
        for server in sorted(self._groups, key=server_order):
            members = self._members(server, apply_masks)
            perf_error = _perf_error(server, problems)
            key = (server, tuple(masked for _, masked in members), perf_error)
            if key not in self._computed:
                outcome = _group_outcome(server, members, perf_error)
                if not isinstance(outcome, GroupRefusal):
                    outcome["group_level_metrics"] = list(outcome["group_level_metrics"])
                self._computed[key] = outcome
            metrics = self._computed[key]
            if isinstance(metrics, GroupRefusal):
                refusals.append(metrics)
                continue
            perf = perf_groups.get(server) if isinstance(server, str) else None
            document.append(_entry(labels[server], server, metrics, perf, metrics["group_level_metrics"]))
        return AggregateMetrics(document, tuple(refusals))


@dataclass(frozen=True, slots=True)
class WrittenMetrics:
    """What :meth:`AggregateMetricsFold.write` leaves of a document it wrote: each group's
    entry without its per-task and per-repeat lists (what ``scores.json`` reads), and the
    groups left out."""

    headlines: list[dict[str, Any]]
    refusals: tuple[GroupRefusal, ...]


class _Output:
    """One document being written: ``dumps_aggregate_metrics``'s list, an entry at a time."""

    def __init__(self, write: Callable[[bytes], object]) -> None:
        self.write = write
        self.headlines: list[dict[str, Any]] = []
        self.refusals: list[GroupRefusal] = []

    def begin(self, headline: dict[str, Any]) -> None:
        """The separator before the next entry (the list's opening before the first)."""
        self.write(b",\n  " if self.headlines else b"[\n  ")
        self.headlines.append(headline)

    def end(self) -> None:
        self.write(b"\n]" if self.headlines else b"[]")

    def written(self) -> WrittenMetrics:
        return WrittenMetrics(self.headlines, tuple(self.refusals))


def _entry(label: Scalar, server: Scalar, metrics: dict[str, Any], perf: dict[str, Any] | None, tasks: Any) -> dict[str, Any]:
    """A group's entry in 0.7.0's key order, its ``group_level_metrics`` being ``tasks``."""
    entry = {"agent_ref": {"name": label}, "_ng_environment_server": server, **metrics, "group_level_metrics": tasks}
    if perf is not None:
        entry["perf_summary"] = perf
    return entry


def _headline(entry: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in entry.items() if key not in ("group_level_metrics", "repeat_level_metrics")}


def dumps_aggregate_metrics(document: list[dict[str, Any]]) -> bytes:
    """The file's bytes: orjson with a two-space indent, no final newline (as 0.7.0 writes)."""
    return dumps(document, indent=True)


def _group_outcome(
    server: Scalar, members: Sequence[tuple[PackedDigest, bool]], perf_error: tuple[str, str] | None
) -> dict[str, Any] | GroupRefusal:
    """A group's metrics, or the refusal naming what 0.7.0 raises on it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _group_metrics(members, perf_error)
    except _Replayed as exc:
        return GroupRefusal(server, exc.error, str(exc))
    except REFUSED as exc:
        return GroupRefusal(server, type(exc).__name__, str(exc))


def _group_metrics(members: Sequence[tuple[PackedDigest, bool]], perf_error: tuple[str, str] | None) -> dict[str, Any]:
    everyone = [digest for digest, _ in members]
    scored = [digest for digest, masked in members if not masked]
    masked = [digest for digest, is_masked in members if is_masked]
    coverage = _coverage(everyone, scored, masked)
    if perf_error is not None:
        raise _Replayed(*perf_error)
    if not scored:
        return {"agent_metrics": dict(coverage), "key_metrics": dict(coverage), "group_level_metrics": iter(()), "repeat_level_metrics": []}
    aligned = _align(everyone, scored, masked)
    for digest in aligned:
        if digest.usage_error is not None:
            raise AttributeError(f"'{digest.usage_error}' object has no attribute 'items'")
    profile = profile_rollouts(aligned)
    tasks = sorted({digest.task for digest in scored})
    overall = {**profile.overall, **coverage, "num_repeats": len({digest.rollout for digest in everyone})}
    headline = {key: value for key, value in overall.items() if key.startswith("mean/")} | coverage
    return {
        "agent_metrics": overall,
        "key_metrics": headline,
        "group_level_metrics": _numbered(profile.tasks, tasks),
        "repeat_level_metrics": profile.repeats,
    }


def _numbered(entries: Iterator[dict[str, Any]], tasks: list[Any]) -> Iterator[dict[str, Any]]:
    """The task entries as made, each given its task index: 0.7.0 pairs the entries with the
    sorted task indices, which outnumber the entries when groupby drops a task whose index is null."""
    for entry, task in zip(entries, tasks, strict=False):
        entry[TASK_KEY] = task
        yield entry


def _coverage(everyone: list[PackedDigest], scored: list[PackedDigest], masked: list[PackedDigest]) -> dict[str, int]:
    """How much of the group the quality numbers come from; empty when nothing was masked, so
    an unmasked run publishes exactly the keys it always did."""
    if not masked:
        return {}
    tasks, measured = {digest.task for digest in everyone}, {digest.task for digest in scored}
    return {
        "coverage/measured_rollouts": len(scored),
        "coverage/masked_rollouts": len(masked),
        "coverage/measured_tasks": len(measured),
        "coverage/fully_masked_tasks": len(tasks - measured),
    }


def _align(everyone: list[PackedDigest], scored: list[PackedDigest], masked: list[PackedDigest]) -> list[PackedDigest]:
    """The scored rows in key order, checked the way 0.7.0 pairs inputs with results: the input
    rows are every row whose key no masked row has, the results every scored row."""
    if masked:
        masked_keys = {digest.key for digest in masked}
        inputs = [digest for digest in everyone if digest.key not in masked_keys]
    else:
        inputs = everyone
    by_input = _unique(inputs, "materialized input")
    by_result = _unique(scored, "result")
    extra = sorted(by_result.keys() - by_input.keys())
    if extra:
        raise ValueError(
            "Rollout results contain rows with no matching materialized input rows. "
            f"Found {len(extra)} extra rollout rows. Extra rollout keys: {extra[:10]}"
        )
    return [by_result[key] for key in sorted(by_input.keys() & by_result.keys())]


def _unique(digests: list[PackedDigest], role: str) -> dict[tuple[Any, Any], PackedDigest]:
    indexed: dict[tuple[Any, Any], PackedDigest] = {}
    for digest in digests:
        if digest.key in indexed:
            raise ValueError(f"Duplicate {role} row for rollout key {digest.key}")
        indexed[digest.key] = digest
    return indexed


def _labels(agents: Mapping[Scalar, Scalar | None]) -> dict[Scalar, Scalar]:
    """Each server's label: its agent's name when no other server has that agent, else the
    server; a label that still clashes with another group's falls back to its server."""
    servers_per_agent = Counter(agent for agent in agents.values() if agent is not None)
    labels = {server: server if agent is None or servers_per_agent[agent] > 1 else agent for server, agent in agents.items()}
    while True:
        uses = Counter(labels.values())
        clashing = [server for server, label in labels.items() if uses[label] > 1 and label != server]
        if not clashing:
            return labels
        labels |= {server: server for server in clashing}


def server_order(server: Scalar) -> tuple[bool, Any]:
    """The documents' group order: 0.7.0's for string servers; a non-string server (an agent
    name that is a number) sorts after them instead of making the sort raise."""
    return (not isinstance(server, str), server)


def _perf_error(server: Scalar, problems: list[str]) -> tuple[str, str] | None:
    """0.7.0's exception on this group's perf_summary, from ``PerfSummaryFold`` problems
    (``group '<name>': <statistic block>: <Type>: <message>``)."""
    prefix = f"group {server!r}: "
    for problem in problems:
        if problem.startswith(prefix):
            _, _, error = problem[len(prefix) :].partition(": ")
            kind, _, message = error.partition(": ")
            return kind, message
    return None
