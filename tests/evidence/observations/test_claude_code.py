"""Claude Code's optional summary suffixes (collection.md §7), golden-style on case 49.

Golden collect case 49 links a compaction to its summary call; its summary ends in one known
suffix. Here every subset of the four suffixes (in order) must link exactly as 0.7.0 did in that
case, and every other tail (wrong order, a repeated suffix, a suffix without its two leading
newlines, an empty or multi-line transcript path, stray characters) must leave the compaction
unlinked exactly as 0.7.0 does (``tests/data/claude_code_compaction_unlinked.json``, the
release's row for an unknown tail). Each case was also checked by hand against the oracle.
"""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from evidence.collect import collect_row
from tests.conformance.conftest import CASES_DIR, as_persisted, strict_diff
from tests.conformance.test_collect_golden import lookup_from

LINKED_PATH = CASES_DIR / "collect" / "49_claude_code_compaction_association.json"
LINKED = json.loads(LINKED_PATH.read_text(encoding="utf-8"))
UNLINKED_PATH = Path(__file__).parents[2] / "data" / "claude_code_compaction_unlinked.json"
UNLINKED = json.loads(UNLINKED_PATH.read_text(encoding="utf-8"))
PATH = "/home/dev/.claude/projects/demo/3f1c.jsonl"
SUFFIXES = (
    (
        "\n\nIf you need specific details from before compaction (like exact code snippets, error messages, or content"
        f" you generated), read the full transcript at: {PATH}"
    ),
    "\n\nRecent messages are preserved verbatim.",
    (
        "\n\nYour REPL VM state has been cleared as part of this compaction. Variables defined in REPL calls before this"
        " point are no longer accessible — redefine any you still need."
    ),
    (
        "\n\nContinue the conversation from where it left off without asking the user any further questions. Resume"
        " directly — do not acknowledge the summary, do not recap what was happening, do not preface with"
        ' "I\'ll continue" or similar. Pick up the last task as if the break never happened.'
    ),
)
# Case 49's summary without its one suffix (``Recent messages are preserved verbatim.``).
BASE = LINKED["row"]["ng_agent_observations"]["records"][1]["summary"].removesuffix(SUFFIXES[1])
SUBSETS = [subset for size in range(len(SUFFIXES) + 1) for subset in itertools.combinations(range(len(SUFFIXES)), size)]
NOT_SUFFIXES = {
    "wrong_order_2_1": SUFFIXES[1] + SUFFIXES[0],
    "wrong_order_4_3": SUFFIXES[3] + SUFFIXES[2],
    "wrong_order_4_1": SUFFIXES[3] + SUFFIXES[0],
    "repeated_2": SUFFIXES[1] + SUFFIXES[1],
    "repeated_4_after_3": SUFFIXES[2] + SUFFIXES[3] + SUFFIXES[3],
    "one_newline_1": SUFFIXES[0][1:],
    "one_newline_2": SUFFIXES[1][1:],
    "one_newline_3": SUFFIXES[2][1:],
    "one_newline_4": SUFFIXES[3][1:],
    "no_newline_4": SUFFIXES[3][2:],
    "three_newlines_2": "\n" + SUFFIXES[1],
    "empty_path": SUFFIXES[0].removesuffix(PATH),
    "path_with_newline": SUFFIXES[0].replace("demo/", "demo\n/"),
    "trailing_space": SUFFIXES[1] + " ",
    "trailing_newline": SUFFIXES[3] + "\n",
    "curly_quotes": SUFFIXES[3].replace('"I\'ll continue"', "\u201cI'll continue\u201d"),
    "unknown_suffix": "\n\nSomething else.",
}


def with_summary(row: dict[str, Any], summary: str) -> dict[str, Any]:
    """``row`` (case 49's shape) with its compaction's summary replaced."""
    row = copy.deepcopy(row)
    row["ng_agent_observations"]["records"][1]["summary"] = summary
    return row


def collected(summary: str) -> dict[str, Any]:
    row = collect_row(with_summary(LINKED["row"], summary), lookup_from(LINKED["capture_files"])).row
    return as_persisted(row)


SUBSET_IDS = ["suffixes_" + ("".join(str(i + 1) for i in subset) or "none") for subset in SUBSETS]


@pytest.mark.parametrize("subset", SUBSETS, ids=SUBSET_IDS)
def test_known_suffixes_in_order_link_the_summary_call(subset: tuple[int, ...]) -> None:
    summary = BASE + "".join(SUFFIXES[index] for index in subset)

    assert strict_diff(collected(summary), with_summary(LINKED["expected_row"], summary)) is None


@pytest.mark.parametrize("tail", NOT_SUFFIXES.values(), ids=NOT_SUFFIXES.keys())
def test_any_other_tail_leaves_the_compaction_unlinked(tail: str) -> None:
    summary = BASE + tail

    assert strict_diff(collected(summary), with_summary(UNLINKED["expected_row"], summary)) is None
