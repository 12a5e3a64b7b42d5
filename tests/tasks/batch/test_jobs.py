"""Finding jobs under a prefix: the default layout, exclusions, ambiguity, configurable globs."""

from __future__ import annotations

import pytest

from evidence import FinishedRun
from tasks.batch.jobs import find_jobs, input_fingerprint
from tasks.inputs.layout import JobLayout
from tasks.inputs.naming import job_id_for
from tasks.rundir import latest_manifest
from tasks.storage import Location
from tests.manifests import finished_run, manifest_bytes

ROOT = "memory://evals"


def put(rel: str, data: bytes = b"{}\n") -> None:
    Location(f"{ROOT}/{rel}").write_bytes(data)


def make_job(folder: str, rollouts: str = "rollouts.jsonl", extra: tuple[str, ...] = ()) -> None:
    prefix = f"{folder}/" if folder else ""
    put(f"{prefix}{rollouts}")
    put(f"{prefix}model-calls/0-0.capture.jsonl")
    for name in extra:
        put(f"{prefix}{name}")


@pytest.fixture(autouse=True)
def _clean(memfs: None) -> None:
    return None


def test_default_layout_finds_nested_jobs_with_run_job_ids() -> None:
    make_job("team-a/job1")
    make_job("job2", rollouts="my_eval.jsonl")
    search = find_jobs(Location(ROOT), JobLayout())
    assert [j.folder for j in search.jobs] == ["job2", "team-a/job1"]
    job2 = search.jobs[0]
    assert job2.rollouts == f"{ROOT}/job2/my_eval.jsonl"
    assert job2.capture_dir == f"{ROOT}/job2/model-calls"
    assert job2.job_id == job_id_for(f"{ROOT}/job2/my_eval.jsonl")
    assert search.skipped == []


def test_gym_side_files_are_not_rollouts_candidates() -> None:
    side = (
        "rollouts_failures.jsonl",
        "rollouts_materialized_inputs.jsonl",
        "rollouts_attempts.jsonl",
        "rollout_verdicts.jsonl",
        "notes.txt",
    )
    make_job("job", extra=side)
    search = find_jobs(Location(ROOT), JobLayout())
    assert [j.rollouts.rsplit("/", 1)[-1] for j in search.jobs] == ["rollouts.jsonl"]


def test_prefix_itself_can_be_the_job_folder() -> None:
    make_job("")
    search = find_jobs(Location(ROOT), JobLayout())
    assert [(j.folder, j.rollouts) for j in search.jobs] == [("", f"{ROOT}/rollouts.jsonl")]


def test_ambiguous_and_rollouts_less_folders_are_reported_and_skipped() -> None:
    make_job("two", extra=("other.jsonl",))
    put("none/model-calls/0-0.capture.jsonl")
    make_job("fine")
    search = find_jobs(Location(ROOT), JobLayout())
    assert [j.folder for j in search.jobs] == ["fine"]
    reasons = {s.folder: (s.reason, s.candidates) for s in search.skipped}
    assert reasons == {
        "two": ("ambiguous: 2 rollouts files", ("other.jsonl", "rollouts.jsonl")),
        "none": ("no rollouts file", ()),
    }


def test_folders_without_a_capture_dir_are_not_jobs() -> None:
    put("out/job-1234/runs/r1/rollouts.jsonl")
    put("loose/rollouts.jsonl")
    search = find_jobs(Location(ROOT), JobLayout())
    assert search.jobs == []
    # a rollouts file without captures is said (issue 35: it was skipped without a word); a run directory is not
    assert [(s.folder, s.reason) for s in search.skipped] == [("loose", "rollouts file(s) but no model-calls/ capture directory")]


def test_globs_and_capture_dir_name_are_configurable() -> None:
    make_job("job", extra=("rollouts_debug.jsonl",))
    put("alt/eval.rows")
    put("alt/captures/0-0.capture.jsonl")
    default = find_jobs(Location(ROOT), JobLayout())
    assert [s.folder for s in default.skipped] == ["job"]
    custom = find_jobs(Location(ROOT), JobLayout(rollouts_glob="*.jsonl", exclude_globs=("*_debug.jsonl",)))
    assert [j.folder for j in custom.jobs] == ["job"]
    other = find_jobs(Location(ROOT), JobLayout(rollouts_glob="*.rows", exclude_globs=(), capture_dir="captures"))
    assert [(j.folder, j.capture_dir) for j in other.jobs] == [("alt", f"{ROOT}/alt/captures")]


def test_input_fingerprint_changes_with_a_capture_file_and_counts_the_sidecar() -> None:
    make_job("job")
    job = find_jobs(Location(ROOT), JobLayout()).jobs[0]
    before = input_fingerprint(job, {})
    put("job/rollouts_failures.jsonl")
    with_sidecar = input_fingerprint(job, {})
    put("job/model-calls/0-0.capture.jsonl", b"{}\n{}\n")
    assert len({before, with_sidecar, input_fingerprint(job, {})}) == 3


def test_latest_manifest_needs_latest_success_and_manifest() -> None:
    out = Location(f"{ROOT}/out")
    assert latest_manifest(out, "job-1") is None
    put("out/job-1/LATEST", b"r1\n")
    manifest = manifest_bytes(finished_run("job-1", "r1", "c"))
    put("out/job-1/runs/r1/manifest.json", manifest)
    assert latest_manifest(out, "job-1") is None
    put("out/job-1/runs/r1/_SUCCESS", b"")
    assert latest_manifest(out, "job-1") == FinishedRun.model_validate_json(manifest)


def test_a_folder_of_shards_is_one_sharded_job() -> None:
    make_job("sharded", rollouts="rollouts-rs1-chunk0.jsonl", extra=("rollouts-rs0-chunk0.jsonl", "rollouts-rs0-chunk0_failures.jsonl"))
    make_job("mixed", rollouts="rollouts.jsonl", extra=("rollouts-rs0-chunk0.jsonl",))
    search = find_jobs(Location(ROOT), JobLayout())
    shards = [f"{ROOT}/sharded/rollouts-rs0-chunk0.jsonl", f"{ROOT}/sharded/rollouts-rs1-chunk0.jsonl"]
    assert [(j.folder, j.rollouts, j.job_id) for j in search.jobs] == [("sharded", shards, job_id_for(shards))]
    assert [(s.folder, s.reason) for s in search.skipped] == [("mixed", "ambiguous: 2 rollouts files")]
    custom = find_jobs(Location(ROOT), JobLayout(shard_glob="rollouts*.jsonl"))
    assert [j.folder for j in custom.jobs] == ["mixed", "sharded"]


def test_a_sharded_jobs_fingerprint_covers_every_shard_and_sidecar() -> None:
    make_job("sharded", rollouts="rollouts-rs1-chunk0.jsonl", extra=("rollouts-rs0-chunk0.jsonl",))
    job = find_jobs(Location(ROOT), JobLayout()).jobs[0]
    before = input_fingerprint(job, {})
    put("sharded/rollouts-rs1-chunk0_materialized_inputs.jsonl")
    with_inventory = input_fingerprint(job, {})
    put("sharded/rollouts-rs0-chunk0.jsonl", b"{}\n{}\n")
    assert len({before, with_inventory, input_fingerprint(job, {})}) == 3
