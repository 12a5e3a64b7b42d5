"""ATIF step metrics and final_metrics when agent steps mix present and missing token counts.

``tests/data/atif_metrics_0_7_0.json`` holds rows whose three model calls have counts, empty
``token_stats`` or none at all, and the document 0.7.0 converts each into (recorded by hand
with the oracle: ``tests/bench/atif_metrics_golden.py``). The golden ATIF cases have every
agent step counted, or one with extras only beside one without (case 06), which cannot tell a
total summed over the counted steps alone from no total.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evidence.atif import rollout_to_atif
from evidence.models.atif import Exporter

GOLDEN = json.loads((Path(__file__).parents[2] / "data" / "atif_metrics_0_7_0.json").read_text(encoding="utf-8"))["cases"]
ORACLE = Exporter(name="nemo-gym", version="0.7.0")

# spec/atif.md §5.11: the three totals over the agent steps, all omitted when any agent step has
# no metrics, each omitted when a step's metrics lack its field; total_steps always.
FINAL_METRICS = {
    "middle_step_without_token_stats": {"total_steps": 5},
    "middle_step_empty_token_stats": {"total_steps": 5},
    "no_step_has_metrics": {"total_steps": 5},
    "first_step_only": {"total_steps": 5},
    "last_step_extras_only": {"total_steps": 5},
    "every_step_cached_on_some": {"total_prompt_tokens": 60, "total_completion_tokens": 12, "total_steps": 5},
    "every_step_prompt_only_on_one": {"total_prompt_tokens": 60, "total_steps": 5},
}


def convert(case: dict[str, Any]) -> dict[str, Any]:
    return rollout_to_atif(case["row"], session_id="s", agent_version="1", exporter=ORACLE)


@pytest.mark.parametrize("case", GOLDEN, ids=[case["name"] for case in GOLDEN])
def test_the_document_is_the_one_0_7_0_converts(case: dict[str, Any]) -> None:
    assert convert(case) == case["expected"]


@pytest.mark.parametrize("case", GOLDEN, ids=[case["name"] for case in GOLDEN])
def test_a_total_needs_every_agent_step_to_count_it(case: dict[str, Any]) -> None:
    assert convert(case)["final_metrics"] == FINAL_METRICS[case["name"]]


def test_a_step_without_counts_has_no_metrics_key() -> None:
    """§5.9: no token field, no ``metrics`` key (not null, not zeros), whether token_stats is
    empty or absent."""
    for name in ("middle_step_without_token_stats", "middle_step_empty_token_stats"):
        case = next(case for case in GOLDEN if case["name"] == name)
        agent = [step for step in convert(case)["steps"] if step["source"] == "agent"]
        assert ["metrics" in step for step in agent] == [True, False, True], name


def test_the_cases_are_the_ones_the_spec_table_names() -> None:
    assert [case["name"] for case in GOLDEN] == list(FINAL_METRICS)
