"""Golden collect cases: 0.7.0's per-row sequence reproduced on persisted rows.

Each case gives the persisted ``row``, the capture directory's files and the row 0.7.0 produced.
Rows are compared by value with strict types, after rendering non-finite floats as Gym's writer
does (``null``). Case 38's integer sum beyond 64 bits is exact in the expected row (the case
description: Python keeps it exact; only Gym's orjson persistence could not write it), and our
writer writes it exactly, so it is compared as is.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from evidence import dump_row, evaluate_row
from evidence.capture import CaptureFiles, CaptureLookup
from evidence.collect import collect_row
from evidence.models.trajectory import TrajectoryRecord
from tests.conformance.conftest import as_persisted, load_cases, strict_diff

CASES = load_cases("collect")


def lookup_from(files: dict[str, str]) -> CaptureLookup:
    """A capture lookup over a case's ``capture_files`` (file name -> exact text)."""

    def lookup(rollout_id: str) -> CaptureFiles | None:
        text = files.get(f"{rollout_id}.capture.jsonl")
        incomplete = f"{rollout_id}.capture.incomplete" in files
        if text is None and not incomplete:
            return None
        return CaptureFiles(jsonl=None if text is None else text.encode("utf-8"), incomplete=incomplete)

    return lookup


@pytest.mark.parametrize(("name", "case"), CASES, ids=[name for name, _ in CASES])
def test_collect_matches_0_7_0(name: str, case: dict[str, Any]) -> None:
    collected = collect_row(case["row"], lookup_from(case["capture_files"]))

    assert collected.rejected is None
    assert strict_diff(as_persisted(collected.row), case["expected_row"]) is None


@pytest.mark.parametrize(("name", "case"), CASES, ids=[name for name, _ in CASES])
def test_collect_leaves_the_input_row_untouched(name: str, case: dict[str, Any]) -> None:
    row = copy.deepcopy(case["row"])

    collect_row(row, lookup_from(case["capture_files"]))

    assert strict_diff(row, case["row"]) is None


def test_strict_diff_tells_numeric_types_apart() -> None:
    assert strict_diff({"a": [1]}, {"a": [1]}) is None
    assert strict_diff(1, 1.0) is not None
    assert strict_diff(1, True) is not None
    assert strict_diff({"a": 1}, {"a": 1, "b": None}) is not None


def test_as_persisted_renders_non_finite_floats_as_null() -> None:
    assert as_persisted({"a": [float("inf"), float("nan"), 1.5]}) == {"a": [None, None, 1.5]}


@pytest.mark.parametrize(("name", "case"), CASES, ids=[name for name, _ in CASES])
def test_a_projected_trajectory_is_canonical(name: str, case: dict[str, Any]) -> None:
    """The engine skips re-validating the projection's own trajectory: that must change nothing.

    Validating the attached dump gives it back unchanged, and health reads the same row the
    same way with and without the shortcut.
    """
    collected = collect_row(case["row"], lookup_from(case["capture_files"]))
    if not collected.projected:
        pytest.skip("the projection did not attach a trajectory")
    value = orjson.loads(dump_row(collected.row))
    trajectory = value["ng_trajectory"]
    assert strict_diff(TrajectoryRecord.model_validate(trajectory).model_dump(mode="json"), trajectory) is None
    options = {"source": "rollouts.jsonl", "line": 1, "ordinal": 0, "ignored": ()}
    assert evaluate_row(value, canonical_trajectory=True, **options) == evaluate_row(value, **options)
