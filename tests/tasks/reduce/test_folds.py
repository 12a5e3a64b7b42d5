"""The reduce fed group by group while the parts land gives what it gives at once from every part."""

from __future__ import annotations

import dataclasses
import functools
import itertools
from pathlib import Path

import orjson
import pytest

from tasks.attempts.context import RunContext
from tasks.attempts.group import run_group
from tasks.attempts.parts import PartMissing
from tasks.discover.refs import AttemptRef
from tasks.discover.scan import discover
from tasks.inputs.shards import Shard
from tasks.reduce.feed import FEED_GROUPS, Feed
from tasks.reduce.outputs import RunFolds, fold_all
from tasks.storage import Location
from tests.jobgen import generate_job
from tests.tasks.attempts.support import EXAMPLE_ROLLOUTS, run_context


def _groups(attempts: list[AttemptRef], size: int) -> list[list[AttemptRef]]:
    """Contiguous groups of one source each, as the fan-out makes them."""
    groups = []
    for _, run in itertools.groupby(attempts, key=lambda attempt: attempt.part_folder):
        run_list = list(run)
        groups += [run_list[i : i + size] for i in range(0, len(run_list), size)]
    return groups


def _context(run_dir: Path) -> RunContext:
    """The bundled example with its failures sidecar."""
    ctx = run_context(run_dir)
    return dataclasses.replace(ctx, shards=(Shard(EXAMPLE_ROLLOUTS, EXAMPLE_ROLLOUTS.parent().child("rollouts_failures.jsonl")),))


def _outputs(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in run_dir.rglob("*") if p.is_file() and "attempts" not in p.parts}


def test_groups_folded_as_they_land_give_the_outputs_of_every_part_folded_at_once(tmp_path: Path) -> None:
    at_once, fed = _context(tmp_path / "at_once"), _context(tmp_path / "fed")
    with discover(list(at_once.shards), at_once.capture_dir) as plan:
        attempts = list(plan.attempts)
    groups = _groups(attempts, 5)
    assert len(groups) > 4
    assert {group[0].source for group in groups} == {"main", "failures"}
    for group in groups:
        run_group(at_once, group, check_existing=False)
    whole = fold_all(at_once, attempts, all_or_nothing=False)
    whole.log.close()

    with RunFolds(fed, all_or_nothing=False) as folds:
        for done, group in enumerate(groups, start=1):
            run_group(fed, group, check_existing=False)  # the later groups' segments do not exist yet
            folds.consume(group)
            snapshot = folds.snapshot()
            assert snapshot.attempts == sum(map(len, groups[:done]))
            assert sum(snapshot.rows.values()) == snapshot.attempts == sum(snapshot.by_status.values())
            if done == 2:
                early = folds.standing()
        # read once later groups were folded: the entries and documents as they stood when taken
        assert len(list(early.entries)) == early.counts.attempts == sum(map(len, groups[:2]))
        assert [entry["key"] for entry in early.entries] == [attempt.key for attempt in attempts[: early.counts.attempts]]
        assert early.documents != folds.standing().documents
        standing = {location.path: data for location, data in folds.documents().items()}
        summary = folds.finish()
    assert len(standing) == 6
    assert all(Path(path).read_bytes() == data for path, data in standing.items())  # the last snapshot is what finish writes
    with summary.log:
        assert (summary.rows, summary.verdicts, summary.atif_files, summary.scores) == (
            whole.rows,
            whole.verdicts,
            whole.atif_files,
            whole.scores,
        )
        assert len(list(summary.log.entries())) == summary.log.count == len(attempts)
    assert _outputs(tmp_path / "fed") == _outputs(tmp_path / "at_once")


@pytest.mark.parametrize("all_or_nothing", [False, True])
def test_what_only_the_end_of_the_run_settles_judges_the_attempts_again(tmp_path: Path, all_or_nothing: bool) -> None:
    """A hostile job repeats identities and rollout ids, and has rows 0.7.0's ATIF export refuses:
    the tables, judged as each group came, say what the whole run says."""
    import pyarrow.parquet as pq

    job = generate_job(tmp_path / "job", rollouts=24, calls_per_rollout=2, mode="hostile", seed=5)
    ctx = run_context(tmp_path / "run", Location(str(job.rollouts)), Location(str(job.capture_dir)))
    with discover(list(ctx.shards), ctx.capture_dir) as plan:
        attempts = list(plan.attempts)
    with RunFolds(ctx, all_or_nothing) as folds:
        for group in _groups(attempts, 5):
            run_group(ctx, group, check_existing=False)
            folds.consume(group)
        summary = folds.finish()
    with summary.log:
        notes = {entry["key"]: entry.get("notes", []) for entry in summary.log.entries()}
    tables = tmp_path / "run" / "tables"
    rollouts = pq.read_table(tables / "rollouts.parquet").to_pylist()
    findings = pq.read_table(tables / "findings.parquet").to_pylist()
    verdict_lines = (tmp_path / "run" / "health" / "rollout_verdicts.jsonl").read_bytes().splitlines()
    assert any("duplicate rollout id" in note for row in rollouts for note in row["notes"] or ())
    assert {row["attempt_key"]: list(row["notes"] or ()) for row in rollouts} == notes
    assert "rollout_duplicate_identity" in {row["check"] for row in findings}
    assert len(findings) == sum(len(orjson.loads(line)["findings"]) for line in verdict_lines)
    assert summary.atif_published is not all_or_nothing  # the job has rows 0.7.0 refuses
    published = {row["atif_file"] for row in rollouts} - {None}
    assert bool(published) is not all_or_nothing


def test_folds_closed_before_they_finish_publish_nothing(tmp_path: Path) -> None:
    """A failed fan-out, or a retried reduce starting over, closes the folds it leaves: no part of an output appears."""
    ctx = _context(tmp_path)
    with discover(list(ctx.shards), ctx.capture_dir) as plan:
        attempts = list(plan.attempts)
    group = _groups(attempts, 5)[0]
    run_group(ctx, group, check_existing=False)
    with RunFolds(ctx, all_or_nothing=False) as folds:
        folds.consume(group)
        assert folds.snapshot().attempts == len(group)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["atif", "attempts"]  # accepted ATIF files, as they are accepted
    assert not (tmp_path / "atif" / "manifest.jsonl").exists()


def test_a_group_that_fails_to_fold_raises_from_the_feed_which_never_blocks_the_fan_out(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    with discover(list(ctx.shards), ctx.capture_dir) as plan:
        attempts = list(plan.attempts)
    with Feed(functools.partial(RunFolds, ctx, all_or_nothing=False)) as feed:
        for group in _groups(attempts, 1)[: FEED_GROUPS * 3]:  # no part was written: the first fails
            feed.put(group)
        with pytest.raises(PartMissing, match="no current part"):
            feed.folds()
