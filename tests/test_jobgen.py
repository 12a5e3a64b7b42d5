"""The job generator: deterministic, faithful to its JobInfo, and the bundled example never drifts."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.jobgen import HUGE_LINE_BYTES, JobInfo, PlantedInput, generate_job, generate_shards, main

EXAMPLE = Path(__file__).parent / "data" / "example_job"
EXAMPLE_ARGS = {"rollouts": 24, "calls_per_rollout": 4, "history_bytes": 200, "failures_fraction": 0.1, "seed": 7}
SMALL = {"rollouts": 24, "calls_per_rollout": 3, "history_bytes": 200}
SMALL_SHAPE = {"calls_per_rollout": 3, "history_bytes": 200}
HOSTILE_KINDS = {
    "failed_attempt",
    "incomplete_marker",
    "truncated_capture_line",
    "orphan_capture",
    "non_object_capture_line",
    "invalid_utf8_capture_line",
    "bom_capture_line",
    "nan_capture_line",
    "blank_capture_line",
    "huge_capture_line",
    "missing_capture",
    "missing_identity",
    "invalid_identity",
    "path_traversal_id",
    "traversal_bait",
    "duplicate_identity",
    "invalid_observations",
    "stale_no_records",
    "blank_line",
    "non_object_line",
    "malformed_json_line",
    "invalid_utf8_line",
}


def _tree(root: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and p.name not in skip}


def _loads(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return orjson.JSONDecodeError


def _rows(path: Path) -> list[dict[str, Any]]:
    return [v for v in map(_loads, path.read_bytes().split(b"\n")) if isinstance(v, dict)]


def _row_id(row: dict[str, Any]) -> str:
    """0.7.0's capture rollout id for the well-formed rows the checks below look up."""
    base = row.get("_ng_rollout_id") or f"{row.get('_ng_task_index')}-{row.get('_ng_rollout_index')}"
    attempt = row.get("_ng_attempt_index")
    return f"{base}-a{attempt}" if isinstance(attempt, int) and attempt > 0 else str(base)


def _line(root: Path, p: PlantedInput) -> bytes:
    return (root / p.path).read_bytes().split(b"\n")[p.line - 1]


def _row(root: Path, p: PlantedInput) -> dict[str, Any]:
    return orjson.loads(_line(root, p))


def _undecodable(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _all_row_ids(root: Path) -> set[str]:
    return {_row_id(r) for name in ("rollouts.jsonl", "rollouts_failures.jsonl") for r in _rows(root / name)}


def _is_duplicate(root: Path, p: PlantedInput) -> bool:
    earlier = [_row_id(r) for r in _rows_before(root, p)]
    return _row_id(_row(root, p)) in earlier


def _rows_before(root: Path, p: PlantedInput) -> list[dict[str, Any]]:
    lines = (root / p.path).read_bytes().split(b"\n")[: p.line - 1]
    return [v for v in map(_loads, lines) if isinstance(v, dict)]


def _invalid_bundle(bundle: dict[str, Any]) -> bool:
    return bool(set(bundle) - {"source", "records", "gaps"}) or any("kind" not in r for r in bundle["records"])


def _bad_identity(row: dict[str, Any]) -> bool:
    return (
        not isinstance(row.get("_ng_rollout_id", ""), str)
        or not isinstance(row.get("_ng_attempt_index", 0), int)
        or not isinstance(row.get("_ng_task_index"), int)
    )


CHECKS: dict[str, Callable[[Path, PlantedInput], bool]] = {
    "failed_attempt": lambda root, p: isinstance(_row(root, p).get("_ng_failure_class"), str),
    "incomplete_marker": lambda root, p: (root / p.path).stat().st_size == 0,
    "truncated_capture_line": lambda root, p: (
        _loads(_line(root, p)) is orjson.JSONDecodeError and not (root / p.path).read_bytes().endswith(b"\n")
    ),
    "orphan_capture": lambda root, p: (root / p.path).is_file() and p.rollout_id not in _all_row_ids(root),
    "non_object_capture_line": lambda root, p: not isinstance(_loads(_line(root, p)), (dict, type)),
    "invalid_utf8_capture_line": lambda root, p: _undecodable(_line(root, p)),
    "bom_capture_line": lambda root, p: _line(root, p).startswith(b"\xef\xbb\xbf") and _loads(_line(root, p)) is orjson.JSONDecodeError,
    "nan_capture_line": lambda root, p: b":NaN" in _line(root, p) and _loads(_line(root, p)) is orjson.JSONDecodeError,
    "blank_capture_line": lambda root, p: _line(root, p).strip() == b"",
    "huge_capture_line": lambda root, p: len(_line(root, p)) >= HUGE_LINE_BYTES and isinstance(_loads(_line(root, p)), dict),
    "missing_capture": lambda root, p: not (root / f"model-calls/{_row_id(_row(root, p))}.capture.jsonl").exists(),
    "missing_identity": lambda root, p: not {"_ng_task_index", "_ng_rollout_id"} & set(_row(root, p)),
    "invalid_identity": lambda root, p: _bad_identity(_row(root, p)),
    "path_traversal_id": lambda root, p: (
        _row(root, p)["_ng_rollout_id"] == p.rollout_id and ("/" in p.rollout_id or p.rollout_id.startswith(".."))
    ),
    "traversal_bait": lambda root, p: (root / p.path).is_file() and not p.path.startswith("model-calls/"),
    "duplicate_identity": _is_duplicate,
    "invalid_observations": lambda root, p: _invalid_bundle(_row(root, p)["ng_agent_observations"]),
    "stale_no_records": lambda root, p: (
        _row(root, p)["ng_model_call_capture"]["gaps"] == [{"code": "model_call_capture_no_records"}]
        and (root / f"model-calls/{p.rollout_id}.capture.jsonl").is_file()
    ),
    "blank_line": lambda root, p: _line(root, p).strip() == b"",
    "non_object_line": lambda root, p: not isinstance(_loads(_line(root, p)), (dict, type)),
    "malformed_json_line": lambda root, p: _loads(_line(root, p)) is orjson.JSONDecodeError,
    "invalid_utf8_line": lambda root, p: _undecodable(_line(root, p)),
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> JobInfo:
    return generate_job(tmp_path_factory.mktemp("hostile") / "job", mode="hostile", seed=3, **SMALL)


@pytest.fixture(scope="module")
def realistic(tmp_path_factory: pytest.TempPathFactory) -> JobInfo:
    return generate_job(tmp_path_factory.mktemp("realistic") / "job", seed=5, failures_fraction=0.2, **SMALL)


@pytest.mark.parametrize("mode", ["realistic", "hostile"])
def test_same_seed_gives_the_same_bytes(tmp_path: Path, mode: str) -> None:
    first = generate_job(tmp_path / "a", mode=mode, seed=11, **SMALL)
    second = generate_job(tmp_path / "b", mode=mode, seed=11, **SMALL)
    assert _tree(first.root) == _tree(second.root)
    assert first.planted == second.planted


def test_another_seed_gives_another_job(tmp_path: Path) -> None:
    first = generate_job(tmp_path / "a", seed=1, **SMALL)
    second = generate_job(tmp_path / "b", seed=2, **SMALL)
    assert first.rollouts.read_bytes() != second.rollouts.read_bytes()


def test_bundled_example_equals_a_fresh_generation(tmp_path: Path) -> None:
    info = generate_job(tmp_path / "job", **EXAMPLE_ARGS)
    assert _tree(EXAMPLE, skip=("README.md",)) == _tree(info.root)
    assert info.total_bytes < 1_000_000


def test_readme_names_the_generation_command() -> None:
    flags = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in EXAMPLE_ARGS.items())
    assert f"python tests/jobgen.py tests/data/example_job {flags}" in (EXAMPLE / "README.md").read_text()


def test_cli_writes_what_the_api_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "cli"), "--rollouts", "24", "--calls-per-rollout", "3", "--history-bytes", "200", "--seed", "4"]) == 0
    assert orjson.loads(capsys.readouterr().out)["main_rows"] == 24
    assert _tree(tmp_path / "cli") == _tree(generate_job(tmp_path / "api", seed=4, **SMALL).root)


def test_refuses_to_overwrite_a_job(realistic: JobInfo) -> None:
    with pytest.raises(FileExistsError):
        generate_job(realistic.root, **SMALL)


def test_hostile_mode_needs_room_for_its_damage(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="hostile mode needs at least 24 rollouts and 2 calls per rollout"):
        generate_job(tmp_path / "job", rollouts=10, mode="hostile")


def test_realistic_counts_match_the_files(realistic: JobInfo) -> None:
    main_rows, failures = _rows(realistic.rollouts), _rows(realistic.failures)
    captures = sorted(realistic.capture_dir.glob("*.capture.jsonl"))
    exchanges = [v for p in captures for v in map(_loads, p.read_bytes().split(b"\n")) if isinstance(v, dict)]
    assert (realistic.main_rows, realistic.failure_rows) == (len(main_rows), len(failures)) == (24, 5)
    assert (realistic.capture_files, realistic.exchanges) == (len(captures), len(exchanges))
    assert sorted((r["_ng_task_index"], r["_ng_rollout_index"]) for r in main_rows) == [(t, r) for t in range(6) for r in range(4)]


def test_realistic_covers_dialects_agents_and_evidence(realistic: JobInfo) -> None:
    rows = _rows(realistic.rollouts)
    lines = [
        orjson.loads(x) for p in realistic.capture_dir.glob("*.jsonl") for x in p.read_bytes().split(b"\n") if isinstance(_loads(x), dict)
    ]
    assert {x["dialect"] for x in lines} == {"responses", "chat", "messages"}
    assert len({r["agent_ref"]["name"] for r in rows}) == 6
    assert any("ng_trajectory" in r for r in rows)
    assert any("ng_agent_observations" in r for r in rows)
    assert any(x.get("client_session_id") for x in lines)
    assert any(x["model_ref"]["name"] == "judge_model" for x in lines)


def test_failed_attempts_are_retried_in_the_main_file(realistic: JobInfo) -> None:
    retried = {(r["_ng_task_index"], r["_ng_rollout_index"]) for r in _rows(realistic.rollouts) if r.get("_ng_attempt_index") == 1}
    failed = {(r["_ng_task_index"], r["_ng_rollout_index"]) for r in _rows(realistic.failures)}
    assert failed == retried
    assert all((realistic.capture_dir / f"{t}-{r}-a1.capture.jsonl").is_file() for t, r in retried)
    assert len(realistic.planted_of("failed_attempt")) == realistic.failure_rows


def test_requests_carry_a_growing_history(realistic: JobInfo) -> None:
    capture = realistic.capture_dir / "0-0.capture.jsonl"
    sizes = [
        len(orjson.dumps(x["request"]["input"]))
        for x in map(_loads, capture.read_bytes().splitlines())
        if isinstance(x, dict) and x["model_ref"]["name"] == "policy_model"
    ]
    assert len(sizes) >= 2
    assert sizes == sorted(sizes)
    assert sizes[-1] > sizes[0]


def test_realistic_plants_are_where_jobinfo_says(realistic: JobInfo) -> None:
    kinds = {p.kind for p in realistic.planted}
    assert kinds == {"failed_attempt", "incomplete_marker", "truncated_capture_line", "orphan_capture"}
    for p in realistic.planted:
        assert CHECKS[p.kind](realistic.root, p), p


def test_one_call_per_rollout_still_plants_every_realistic_kind(tmp_path: Path) -> None:
    """With one call per rollout few captures have two lines; the damage goes to one-line ones."""
    info = generate_job(tmp_path / "job", seed=12, **{**SMALL, "calls_per_rollout": 1})
    assert {p.kind for p in info.planted} == {"failed_attempt", "incomplete_marker", "truncated_capture_line", "orphan_capture"}
    for p in info.planted:
        assert CHECKS[p.kind](info.root, p), p


def test_hostile_mode_refuses_one_call_per_rollout(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="2 calls per rollout"):
        generate_job(tmp_path / "job", mode="hostile", **{**SMALL, "calls_per_rollout": 1})


def test_hostile_plants_every_kind(hostile: JobInfo) -> None:
    assert {p.kind for p in hostile.planted} == HOSTILE_KINDS == set(CHECKS)


def test_hostile_plants_are_where_jobinfo_says(hostile: JobInfo) -> None:
    failed = [p for p in hostile.planted if not CHECKS[p.kind](hostile.root, p)]
    assert failed == []


def test_hostile_counts_only_object_rows(hostile: JobInfo) -> None:
    assert hostile.main_rows == len(_rows(hostile.rollouts))
    assert hostile.failure_rows == len(_rows(hostile.failures))


def test_shards_are_jobs_of_their_own_with_unique_rollout_ids(tmp_path: Path) -> None:
    paths = generate_shards(tmp_path / "job", rollouts=20, shard_rollouts=8, **SMALL_SHAPE)
    assert [p.name for p in paths] == ["shard-00.jsonl", "shard-01.jsonl", "shard-02.jsonl"]
    assert sorted(p.name for p in (tmp_path / "job").iterdir()) == [
        "model-calls",
        "shard-00.jsonl",
        "shard-00_failures.jsonl",
        "shard-01.jsonl",
        "shard-01_failures.jsonl",
        "shard-02.jsonl",
        "shard-02_failures.jsonl",
    ]
    ids = [_row_id(row) for path in paths for row in _rows(path)]
    assert len(ids) == 20
    assert len(set(ids)) == len(ids)
    tasks = [{row["_ng_task_index"] for row in _rows(path)} for path in paths]
    assert all(max(a) < min(b) for a, b in itertools.pairwise(tasks))
    # the last shard is the remainder, and each is the job generate_job writes for its seed and task range
    generate_job(tmp_path / "alone", rollouts=4, seed=2, first_task=2 * 3, **SMALL_SHAPE)
    assert paths[2].read_bytes() == (tmp_path / "alone" / "rollouts.jsonl").read_bytes()
    captures = {p.name for p in (tmp_path / "job" / "model-calls").iterdir()}
    assert {p.name for p in (tmp_path / "alone" / "model-calls").iterdir()} <= captures
