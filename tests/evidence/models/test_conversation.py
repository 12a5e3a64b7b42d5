"""Conversation items and their content parts exactly as 0.7.0 keeps, drops and fills keys (§8.9).

Four golden tables, each produced by hand from NeMo Gym 0.7.0 (see their descriptions):
``conversation_items_0_7_0.json`` (one item's dump, or its refusal, for every part and item type
and every rule: known keys, unknown keys, defaults, token metadata all or nothing),
``conversation_item_rows_0_7_0.json`` (whole collected rows, so the consequences of a refused
item are checked too), ``conversation_parts_atif_0_7_0.json`` (the ATIF exporter's verdict on
each content part) and ``atif_rows_0_7_0.json`` (whole rows and the file 0.7.0 exports). Dumps
are compared as text, so key order counts.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evidence.atif import rollout_to_atif
from evidence.collect import collect_row
from evidence.errors import AtifExportError
from evidence.models.atif import Exporter
from evidence.models.observations import AgentInvocationRecord
from tests.conformance.conftest import CASES_DIR, as_persisted, strict_diff
from tests.conformance.test_collect_golden import lookup_from

DATA = Path(__file__).parents[2] / "data"


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


ITEMS = _load(DATA / "conversation_items_0_7_0.json")["cases"]
ROWS = _load(DATA / "conversation_item_rows_0_7_0.json")["cases"]
ATIF_PARTS = _load(DATA / "conversation_parts_atif_0_7_0.json")["cases"]
ATIF_ROWS = _load(DATA / "atif_rows_0_7_0.json")["cases"]
OBSERVED = _load(CASES_DIR / "collect" / "50_conversation_item_normalisation.json")
PRODUCED = _load(CASES_DIR / "collect" / "29_producer_trajectory_merge_by_model_call_id_and_tool_merge.json")
ATIF_CASE = _load(CASES_DIR / "atif" / "01_canonical_two_turn_tools_reasoning.json")
ATIF_ROW = json.loads(ATIF_CASE["rollouts_jsonl"].splitlines()[0])
EXPORTER = Exporter(name="nemo-gym", version="0.7.0")


def dumped(item: Any) -> Any:
    record = AgentInvocationRecord.model_validate({"kind": "agent_invocation", "invocation_id": "a", "conversation": [item]})
    return record.model_dump(mode="json")["conversation"][0]


@pytest.mark.parametrize("name", [name for name, case in ITEMS.items() if "dumped" in case])
def test_item_is_dumped_as_0_7_0_dumps_it(name: str) -> None:
    case = ITEMS[name]

    assert json.dumps(dumped(case["item"])) == json.dumps(case["dumped"])


@pytest.mark.parametrize("name", [name for name, case in ITEMS.items() if case.get("invalid")])
def test_item_is_refused_where_0_7_0_refuses_it(name: str) -> None:
    with pytest.raises(ValidationError):
        dumped(ITEMS[name]["item"])


def test_partial_token_metadata_names_what_is_missing() -> None:
    with pytest.raises(ValidationError, match="missing: generation_log_probs, prompt_token_ids"):
        dumped({"role": "user", "content": "hi", "generation_token_ids": [1]})


def row_with(case_name: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The row a ``ROWS`` case was collected from, and its capture files."""
    case = ROWS[case_name]
    item, index = ITEMS[case["item"]]["item"], case["task_index"]
    base = OBSERVED if case_name.endswith("_in_observations") else PRODUCED
    row = copy.deepcopy(base["row"])
    row["_ng_task_index"] = index
    if base is OBSERVED:
        row["ng_agent_observations"]["records"][0]["conversation"] = [item]
    else:
        trajectory = row["ng_trajectory"]
        trajectory["task_id"], trajectory["rollout_id"] = str(index), f"{index}-0"
        for turn in trajectory["turns"]:
            turn["task_id"], turn["rollout_id"] = str(index), f"{index}-0"
        trajectory["invocations"][0]["conversation"] = [item]
    files = {f"{index}-0.{name.split('.', 1)[1]}": text for name, text in base["capture_files"].items()}
    return row, files


@pytest.mark.parametrize("name", ROWS)
def test_row_with_the_item_is_collected_as_0_7_0_collects_it(name: str) -> None:
    row, files = row_with(name)

    collected = as_persisted(collect_row(row, lookup_from(files)).row)

    assert strict_diff(collected, ROWS[name]["expected_row"]) is None
    assert json.dumps(collected) == json.dumps(ROWS[name]["expected_row"])


@pytest.mark.parametrize("name", ["reason_summary_extra_in_observations", "reason_summary_extra_in_producer_trajectory"])
def test_kept_reasoning_keys_make_the_atif_export_refuse_as_0_7_0_does(name: str) -> None:
    row, files = row_with(name)
    collected = collect_row(row, lookup_from(files)).row

    with pytest.raises(AtifExportError, match=r"summary\[0\]: unsupported fields would be dropped: 'x_extra', 'y'"):
        rollout_to_atif(collected, session_id="s", agent_version="1", exporter=EXPORTER, hygiene=False)


def atif_row_with(place: str, part: dict[str, Any]) -> dict[str, Any]:
    """Golden ATIF case 01's row with ``part`` put at ``place`` (see the table's description)."""
    row = copy.deepcopy(ATIF_ROW)
    trajectory = row["ng_trajectory"]
    copies = [trajectory["invocations"][0]["conversation"]]
    copies += [turn.get(key) for turn in trajectory["turns"] for key in ("question", "answer", "reasoning_content")]
    for item in (item for items in copies if isinstance(items, list) for item in items):
        if place == "user_message" and item.get("role") == "user":
            item["content"], item["status"] = [part], "completed"
        elif place == "tool_output" and item.get("type") == "function_call_output" and item["call_id"] == "call-read":
            item["output"] = [part]
        elif place.startswith("reasoning_") and item.get("id") == "reason-1":
            item[place.removeprefix("reasoning_")] = [part]
    return row


@pytest.mark.parametrize("name", ATIF_PARTS)
def test_atif_export_judges_each_content_part_as_0_7_0_does(name: str) -> None:
    case = ATIF_PARTS[name]
    row = atif_row_with(case["place"], case["part"])

    try:
        rollout_to_atif(row, session_id="s", agent_version="1", exporter=EXPORTER, hygiene=False)
        error = None
    except AtifExportError as exc:
        error = f"AtifExportError: {exc}"

    assert error == case["error"]


@pytest.mark.parametrize("name", ATIF_ROWS)
def test_atif_export_converts_or_refuses_the_row_as_0_7_0_does(name: str) -> None:
    case = ATIF_ROWS[name]

    try:
        converted = rollout_to_atif(case["row"], session_id="bench", agent_version="1.0", exporter=EXPORTER, hygiene=False)
    except AtifExportError as exc:
        error = str(exc)
    else:
        error = None
        assert strict_diff(converted, case["expected"]) is None
    assert error == case.get("error")
