"""A job's shards: paths, globs and comma-separated globs as `gym eval aggregate` expands them."""

from __future__ import annotations

import re

import pytest

from tasks.inputs.naming import job_id_for
from tasks.inputs.shards import expand_rollouts, find_shards
from tasks.storage import InputNotFound, Location

ROOT = "memory://shards"


@pytest.fixture(autouse=True)
def _files(memfs: None) -> None:
    for name in (
        "a/r-rs0-chunk1.jsonl",
        "a/r-rs0-chunk0.jsonl",
        "a/r-rs0-chunk0_failures.jsonl",
        "a/r-rs0-chunk0_materialized_inputs.jsonl",
        "b/r-rs1-chunk0.jsonl",
        "b/r-rs1-chunk0_materialized_inputs.jsonl",
    ):
        Location(f"{ROOT}/{name}").write_bytes(b"{}\n")


def test_globs_are_sorted_per_pattern_deduplicated_and_skip_sidecars() -> None:
    urls = expand_rollouts(f"{ROOT}/a/*.jsonl, {ROOT}/b/*.jsonl,{ROOT}/a/r-rs0-chunk0.jsonl*", {})
    assert urls == [f"{ROOT}/a/r-rs0-chunk0.jsonl", f"{ROOT}/a/r-rs0-chunk1.jsonl", f"{ROOT}/b/r-rs1-chunk0.jsonl"]


def test_repeated_paths_keep_their_order_and_one_path_is_kept_as_given() -> None:
    second, first = f"{ROOT}/b/r-rs1-chunk0.jsonl", f"{ROOT}/a/r-rs0-chunk0.jsonl"
    assert expand_rollouts([second, first, second], {}) == [second, first]
    assert expand_rollouts("results/rollouts.jsonl", {}) == ["results/rollouts.jsonl"]


def test_a_glob_matching_nothing_is_an_error() -> None:
    with pytest.raises(InputNotFound, match="no rollouts file matches"):
        expand_rollouts([f"{ROOT}/a/*.jsonl", f"{ROOT}/c/*.jsonl"], {})


def test_each_shard_finds_the_sidecars_beside_it() -> None:
    shards = find_shards(expand_rollouts([f"{ROOT}/a/*chunk0.jsonl", f"{ROOT}/b/*.jsonl"], {}), {})
    assert [(s.name, s.failures and s.failures.name, s.materialized and s.materialized.name) for s in shards] == [
        ("r-rs0-chunk0.jsonl", "r-rs0-chunk0_failures.jsonl", "r-rs0-chunk0_materialized_inputs.jsonl"),
        ("r-rs1-chunk0.jsonl", None, "r-rs1-chunk0_materialized_inputs.jsonl"),
    ]


def test_shards_need_distinct_names_and_no_explicit_failures_sidecar() -> None:
    Location(f"{ROOT}/c/r-rs0-chunk0.jsonl").write_bytes(b"{}\n")
    with pytest.raises(ValueError, match=re.escape("distinct file names: r-rs0-chunk0.jsonl")):
        find_shards([f"{ROOT}/a/r-rs0-chunk0.jsonl", f"{ROOT}/c/r-rs0-chunk0.jsonl"], {})
    with pytest.raises(ValueError, match="--failures names one sidecar"):
        find_shards([f"{ROOT}/a/r-rs0-chunk0.jsonl", f"{ROOT}/b/r-rs1-chunk0.jsonl"], {}, failures=f"{ROOT}/x.jsonl")


def test_a_sharded_job_id_hashes_its_shards_and_one_shard_is_a_one_file_job() -> None:
    one = f"{ROOT}/a/r-rs0-chunk0.jsonl"
    assert job_id_for([one]) == job_id_for(one)
    assert job_id_for([one, f"{ROOT}/b/r-rs1-chunk0.jsonl"]).startswith("a-")
    assert job_id_for([one, f"{ROOT}/b/r-rs1-chunk0.jsonl"]) != job_id_for(one)
