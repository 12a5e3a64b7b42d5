"""The aggregate-metrics fold against NeMo Gym 0.7.0's own bytes (golden cases from the oracle).

``tests/data/aggregate_metrics_0_7_0.json`` holds each case's rows and masked positions, the
bytes ``shared/oracle/ref_aggregate.py`` wrote with those rows given ``mask_sample: true``
(and, for a case with masks, without them) and the groups it left out. Regenerate it with
``tests/bench/aggregate_diff.py --write-golden`` (the full differential campaign lives there).
"""

from __future__ import annotations

import io
import pickle
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evidence import AggregateMetricsFold, GroupRefusal, ScoreDigest, dumps_aggregate_metrics, score_digest
from evidence.folds.describe import describe_groups
from evidence.perf_summary import InMemorySort, PerfSummaryFold, perf_group, summary_input

GOLDEN = orjson.loads((Path(__file__).parents[2] / "data" / "aggregate_metrics_0_7_0.json").read_bytes())["cases"]
MASKED = [case for case in GOLDEN if case["masked"]]


def folded(rows: list[dict[str, Any]], masked: set[int], *, overrides: bool = True) -> tuple[AggregateMetricsFold, PerfSummaryFold]:
    """The stage's folds over rows in file order: masked rows masked by the caller (``overrides``)
    or by their own ``mask_sample``."""
    fold, perf = AggregateMetricsFold(), PerfSummaryFold(InMemorySort())
    for i, row in enumerate(rows):
        value = {**row, "mask_sample": True} if not overrides and i in masked else row
        perf.add(perf_group(value), summary_input(value.get("ng_perf")))
        fold.add(score_digest(value), masked=overrides and i in masked)
    return fold, perf


def written(fold: AggregateMetricsFold, perf: PerfSummaryFold, *, apply_masks: bool = True) -> tuple[str, list[str]]:
    """A document's bytes and the oracle's refusal lines."""
    result = fold.result(perf.document()["groups"], perf.problems, apply_masks=apply_masks)
    refusals = [f"group {r.group!r} refused by 0.7.0: {r.error}: {r.message}" for r in result.refusals]
    return dumps_aggregate_metrics(result.document).decode(), refusals


def run(rows: list[dict[str, Any]], masked: set[int], *, overrides: bool = True, apply_masks: bool = True) -> tuple[str, list[str]]:
    return written(*folded(rows, masked, overrides=overrides), apply_masks=apply_masks)


@pytest.mark.parametrize("case", GOLDEN, ids=[case["name"] for case in GOLDEN])
def test_health_masks_give_the_bytes_0_7_0_writes_for_mask_sample(case: dict[str, Any]) -> None:
    assert run(case["rows"], set(case["masked"])) == (case["expected"], case["expected_refusals"])


@pytest.mark.parametrize("case", MASKED, ids=[case["name"] for case in MASKED])
def test_mask_sample_in_the_rows_masks_alike(case: dict[str, Any]) -> None:
    assert run(case["rows"], set(case["masked"]), overrides=False) == (case["expected"], case["expected_refusals"])


@pytest.mark.parametrize("case", MASKED, ids=[case["name"] for case in MASKED])
def test_the_raw_document_ignores_the_callers_masks(case: dict[str, Any]) -> None:
    expected = (case["expected_unmasked"], case["expected_unmasked_refusals"])
    assert run(case["rows"], set(case["masked"]), apply_masks=False) == expected


@pytest.mark.parametrize("case", MASKED, ids=[case["name"] for case in MASKED])
def test_one_fold_gives_both_documents_in_any_order(case: dict[str, Any]) -> None:
    fold, perf = folded(case["rows"], set(case["masked"]))
    clean = (case["expected"], case["expected_refusals"])
    raw = (case["expected_unmasked"], case["expected_unmasked_refusals"])
    assert [written(fold, perf), written(fold, perf, apply_masks=False), written(fold, perf)] == [clean, raw, clean]


def streamed(fold: AggregateMetricsFold, perf: PerfSummaryFold) -> tuple[tuple[bytes, list[str]], tuple[bytes, list[str]]]:
    """Both documents as ``write`` streams them, each with its refusal lines."""
    raw, clean = io.BytesIO(), io.BytesIO()
    results = fold.write(perf.document()["groups"], perf.problems, raw.write, clean.write)
    lines = [[f"group {r.group!r} refused by 0.7.0: {r.error}: {r.message}" for r in result.refusals] for result in results]
    return (raw.getvalue(), lines[0]), (clean.getvalue(), lines[1])


@pytest.mark.parametrize("case", GOLDEN, ids=[case["name"] for case in GOLDEN])
def test_the_streamed_documents_are_the_whole_documents_bytes(case: dict[str, Any]) -> None:
    """Written entry by entry and task by task, the files are the bytes of the whole documents
    (a wrong separator or indent anywhere in the splice changes them)."""
    fold, perf = folded(case["rows"], set(case["masked"]))
    raw, clean = streamed(fold, perf)
    assert clean == (case["expected"].encode(), case["expected_refusals"])
    if case["masked"]:
        assert raw == (case["expected_unmasked"].encode(), case["expected_unmasked_refusals"])
    else:
        assert raw == clean
    whole = fold.result(perf.document()["groups"], perf.problems)
    assert clean[0] == dumps_aggregate_metrics(whole.document)
    headlines = fold.write(perf.document()["groups"], perf.problems, len, len)[1].headlines
    assert headlines == [{k: v for k, v in e.items() if k not in ("group_level_metrics", "repeat_level_metrics")} for e in whole.document]


def test_the_golden_cases_cover_masks_refusals_and_repeats() -> None:
    names = {case["name"] for case in GOLDEN}
    assert len(GOLDEN) >= 10
    assert len(MASKED) >= 3
    assert {"duplicate_key", "duplicate_with_masked", "perf_overflow", "extreme_floats", "usage_list", "masked_whole_repeat"} <= names
    assert sum(bool(case["expected_refusals"]) for case in GOLDEN) >= 5
    assert any('"repeat_level_metrics": [\n      {' in case["expected"] for case in GOLDEN)


def test_a_masked_whole_repeat_still_counts_in_num_repeats() -> None:
    """Rollout 1 of each of three tasks masked: 0.7.0 counts num_repeats over every row (3),
    while the repeat-level metrics and the coverage keys see the six scored rows only."""
    case = next(case for case in GOLDEN if case["name"] == "masked_whole_repeat")
    (entry,) = orjson.loads(run(case["rows"], set(case["masked"]))[0])
    coverage = {key: value for key, value in entry["key_metrics"].items() if key.startswith("coverage/")}
    assert entry["agent_metrics"]["num_repeats"] == 3
    assert coverage == {
        "coverage/measured_rollouts": 6,
        "coverage/masked_rollouts": 3,
        "coverage/measured_tasks": 3,
        "coverage/fully_masked_tasks": 0,
    }
    assert [repeat["_ng_rollout_index"] for repeat in entry["repeat_level_metrics"]] == [0, 2]


def test_row_order_does_not_matter_when_keys_are_unique() -> None:
    case = next(case for case in GOLDEN if case["name"] == "basic_repeats")
    rows = list(case["rows"])
    random.Random(5).shuffle(rows)
    assert run(rows, set()) == (case["expected"], [])


def test_digests_round_trip_through_json_and_pickle() -> None:
    for case in GOLDEN:
        for digest in filter(None, map(score_digest, case["rows"])):
            assert ScoreDigest.from_json(orjson.loads(orjson.dumps(digest.to_json()))) == digest
            assert pickle.loads(pickle.dumps(digest)) == digest
            assert ScoreDigest.from_json(orjson.loads(orjson.dumps(digest))) == digest


def test_a_fold_of_restored_digests_writes_the_same_bytes() -> None:
    case = next(case for case in GOLDEN if case["name"] == "masked_subset")
    fold = AggregateMetricsFold()
    for i, row in enumerate(case["rows"]):
        fold.add(ScoreDigest.from_json(orjson.loads(orjson.dumps(score_digest(row).to_json()))), masked=i in case["masked"])
    perf = PerfSummaryFold(InMemorySort())
    for row in case["rows"]:
        perf.add(perf_group(row), summary_input(row.get("ng_perf")))
    assert dumps_aggregate_metrics(fold.result(perf.document()["groups"]).document).decode() == case["expected"]


def test_a_digest_keeps_numbers_and_keys_never_the_heavy_fields() -> None:
    heavy = "x" * 100_000
    row = {
        "_ng_task_index": 4,
        "_ng_rollout_index": 2,
        "agent_ref": {"name": "simple_agent"},
        "reward": True,
        "responses_create_params": {"input": heavy},
        "ng_trajectory": {"turns": [heavy]},
        "ng_model_call_capture": heavy,
        "ng_agent_observations": [heavy],
        "expected_answer": heavy,
        "ng_perf": {"total_latency_ms": 5.0},
        "response": {"output": [heavy], "usage": {"input_tokens": 7, "output_tokens": 1, "details": {"x": heavy}}},
    }
    digest = score_digest(row)
    assert len(orjson.dumps(digest)) < 600
    assert digest.measures == (("reward", 1), ("input_tokens", 7), ("output_tokens", 1))
    assert (digest.key, digest.server, digest.masked) == ((4, 2), "simple_agent", False)


@pytest.mark.parametrize(
    ("row", "server"),
    [
        ({"agent_ref": {"name": "a"}}, "a"),
        ({"agent_ref": {"name": "a"}, "_ng_environment_server": "env"}, "env"),
        ({"agent_ref": {"name": "a"}, "_ng_environment_server": 3}, "a"),
        ({"_ng_environment_server": ""}, ""),
        ({"agent_ref": {"name": ""}}, None),
        ({"agent_ref": "a"}, None),
        ({}, None),
    ],
)
def test_a_row_belongs_to_its_server_else_its_agent(row: dict[str, Any], server: str | None) -> None:
    digest = score_digest(row)
    assert (digest.server if digest else None) == server


def test_a_refusal_names_the_group_and_0_7_0s_error() -> None:
    refusal = GroupRefusal("env", "ValueError", "Duplicate result row for rollout key (0, 0)")
    assert str(refusal) == "aggregate metrics: group 'env' left out: 0.7.0 raises ValueError: Duplicate result row for rollout key (0, 0)"


# ---- the batched per-task statistics against pandas frame by frame (0.7.0's way, histograms aside)


def frame_by_frame(table: Any) -> list[tuple[Any, dict[str, Any]]]:
    """0.7.0's describe, spelled out: the histogram row holds an object per column with data
    (W&B's), which keeps the stacked table of object dtype, so int results stay ints."""
    import numpy as np
    import pandas as pd

    out = []
    for key, rows in table.drop(columns=["r"]).groupby("t"):
        frame = rows.drop(columns="t")
        stats = [frame.mean(), frame.max(), frame.min(), frame.median(), frame.std()]
        drawn = {}
        for column in frame.columns:
            values = frame[column].dropna()
            drawn[column] = np.histogram(values, bins=64) if len(values) else None
        if stats[4].isna().all():
            complete = frame.columns[frame.notna().all()]
            stats[4][complete] = stats[4][complete].fillna(0)
        histograms = pd.Series(drawn, index=frame.columns, dtype=object)
        row = pd.DataFrame([*stats, histograms], index=["mean", "max", "min", "median", "std", "h"])
        stacked = row.stack(future_stack=True).to_frame().T
        stacked.columns = stacked.columns.map("/".join)
        record = stacked.to_dict("records")[0]
        out.append((key, {k: v for k, v in record.items() if not k.startswith("h/") and v is not None and pd.notna(v)}))
    return out


FLOATS = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, 0.5, 1e15, -3.25, 1e300, 5e-324, float("nan"), float("nan")]),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
)
INTS = st.one_of(st.sampled_from([0, 1, -1, 2**53 + 1, 10**12]), st.integers(min_value=-1000, max_value=1000))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # overflow on 1e300, as in 0.7.0
@settings(max_examples=60, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(["f", "i"]), min_size=0, max_size=3),
    sizes=st.lists(st.integers(min_value=1, max_value=20), min_size=1, max_size=12),
    data=st.data(),
)
def test_batched_statistics_equal_pandas_frame_by_frame(kinds: list[str], sizes: list[int], data: st.DataObject) -> None:
    import pandas as pd

    records = []
    for task, size in enumerate(sizes):
        for rollout in range(size):
            values = {f"c{i}": data.draw(FLOATS if kind == "f" else INTS) for i, kind in enumerate(kinds)}
            records.append({"t": task, "r": rollout, **values})
    table = pd.DataFrame.from_records(records)
    try:
        expected: Any = orjson.dumps(frame_by_frame(table))
    except ValueError as exc:  # numpy refuses a histogram: so must we
        expected = str(exc)
    try:
        actual: Any = orjson.dumps(list(describe_groups(table, "t", [f"c{i}" for i in range(len(kinds))])))
    except ValueError as exc:
        actual = str(exc)
    assert actual == expected
