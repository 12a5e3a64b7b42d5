"""The job generator's score options (repeats, reward kinds, servers, masks); off by default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.jobgen import REWARD_KINDS, generate_job

SMALL = {"rollouts": 48, "calls_per_rollout": 2, "history_bytes": 100, "seed": 4}


def rows(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def test_options_shape_the_rows(tmp_path: Path) -> None:
    info = generate_job(tmp_path, **SMALL, repeats=6, reward_kinds=REWARD_KINDS, servers=3, mask_fraction=0.25)
    main = rows(info.rollouts)
    assert {r["_ng_rollout_index"] for r in main} == set(range(6))
    assert {r["_ng_environment_server"] for r in main} == {f"env_server_{k}" for k in range(3)}
    assert all(r["_ng_environment_server"] == f"env_server_{r['_ng_task_index'] % 3}" for r in main + rows(info.failures))
    kinds = {type(r["reward"]).__name__ if "reward" in r else "missing" for r in main}
    assert kinds == {"float", "int", "bool", "missing"}
    assert 0 < sum(r.get("mask_sample") is True for r in main) < len(main)


def test_options_are_deterministic_and_leave_the_rest_alone(tmp_path: Path) -> None:
    plain = rows(generate_job(tmp_path / "plain", **SMALL).rollouts)
    scored = rows(generate_job(tmp_path / "scored", **SMALL, reward_kinds=("int",), servers=2).rollouts)
    again = rows(generate_job(tmp_path / "again", **SMALL, reward_kinds=("int",), servers=2).rollouts)
    assert scored == again
    strip = ("reward", "_ng_environment_server")
    assert [{k: v for k, v in r.items() if k not in strip} for r in scored] == [
        {k: v for k, v in r.items() if k not in strip} for r in plain
    ]
    assert all(isinstance(r["reward"], int) and not isinstance(r["reward"], bool) for r in scored)


def test_unknown_reward_kind_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown reward kinds"):
        generate_job(tmp_path, **SMALL, reward_kinds=("float", "text"))
