"""The rollout viewer's pure parts: excerpts, one rollout's view, the index and its detail files, the page and its policy."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from evidence.gaps import GAPS
from evidence.tables import AttemptIdentity, atif_columns, row_facts
from evidence.viewer import (
    SCRIPT,
    RolloutView,
    ViewerIndex,
    ViewFacts,
    chunk_name,
    clean,
    decode_row,
    excerpt,
    render_viewer,
    rollout_view,
    script_json,
    view_facts,
    viewer_csp,
    viewer_page,
)
from evidence.viewer.text import EXCERPT_CHARS, SHORT_CHARS, Excerpts
from tests.viewer_runs import BREAKOUT, HOSTILE, LONG, hostile_row
from tests.viewer_runs import SCRIPT as SCRIPT_TAG

IDENTITY = AttemptIdentity("", "", "main:1", 0, "rollouts.jsonl", "main", 1, 1, "0-0", "ok")
LINKS = {"report": "../report.html", "rollouts": "../rollouts.jsonl", "atif": "../atif/"}


@dataclass(frozen=True)
class Viewed:
    entry: dict[str, Any]
    detail: dict[str, Any]  # the page's data, decoded


def judged(
    row: dict[str, Any] | None, verdict: dict[str, Any] | None = None, atif: tuple[Any, Any, Any] = ("withheld", None, None)
) -> RolloutView:
    """A row's view as the reduce makes it: its facts carried through a part's bytes, then judged."""
    line = json.dumps(row).encode() if row is not None else b"[1]"
    carried = ViewFacts.decode(view_facts(line, row, row_facts(row)).encode())
    return rollout_view(carried, IDENTITY, verdict, atif)


def view(
    row: dict[str, Any] | None, verdict: dict[str, Any] | None = None, atif: tuple[Any, Any, Any] = ("withheld", None, None)
) -> Viewed:
    made = judged(row, verdict, atif)
    return Viewed(made.entry, orjson.loads(made.detail))


def test_clean_replaces_lone_surrogates_and_keeps_pairs() -> None:
    assert clean("a\ud800b") == "a\ufffdb"
    assert clean("\ud83d\ude00") == "\U0001f600"
    assert clean("plain") == "plain"


def test_excerpt_cuts_long_text_and_says_how_long() -> None:
    assert excerpt(None) is None
    assert excerpt("short") == "short"
    assert excerpt({"a": [1, 2]}) == '{"a":[1,2]}'
    cut = excerpt(LONG)
    assert cut == [LONG[:EXCERPT_CHARS], len(LONG)]
    assert excerpt("x" * 500, 10) == ["x" * 10, 500]


def test_excerpts_of_growing_questions_are_their_excerpts() -> None:
    """Each value's excerpt, whether its text extends the one before or not (wide and lone
    characters, a wide integer the fallback writer spells, a value that shrinks, a string)."""
    items: list[Any] = [{"role": "user", "content": "q\u00e9\U0001f600" * 30}, {"content": "a\ud800", "n": 2**70}, {"c": "\u65e5" * 60}]
    values: list[Any] = [[], items[:1], items[:2], items, items[:1], None, "a question", [items[2]], items, {"k": 1.5}]
    for limit in (SHORT_CHARS, 1000):
        excerpts = Excerpts(limit)
        assert [excerpts(value) for value in values] == [excerpt(value, limit) for value in values]


def test_script_json_cannot_end_a_script_element() -> None:
    value = {"a": BREAKOUT, "b": "\u2028\u2029", "c": "&"}
    text = script_json(value)
    assert b"<" not in text
    assert b">" not in text
    assert b"&" not in text
    assert "\u2028".encode() not in text
    assert "\u2029".encode() not in text
    assert orjson.loads(text) == value


def test_a_rollout_view_joins_findings_tool_calls_and_gaps() -> None:
    verdict = {
        "verdict": "unhealthy",
        "findings": [
            {"check": "agent_turn_hollow", "locator": {"turn": 2}, "detail": {"reason": "hollow"}},
            {"check": "model_call_failed", "locator": {"call_id": "mc-2"}, "detail": {"status": 500}},
            {"check": "trajectory_capture_mismatch", "locator": {"call_id": "nowhere"}, "detail": {}},
            {"check": "rollout_missing_agent_turns", "detail": {"reason": "none"}},
        ],
        "unobserved": ["model_call_runaway_generation"],
    }
    made = view(hostile_row(0, 0), verdict, atif_columns("0-0.json", None))
    detail, entry = made.detail, made.entry
    assert list(detail) == [
        *("line", "key", "input_line", "shard_file", "rollout_id", "capture_file", "status", "reason", "notes", "repaired"),
        *("readable", "unreadable_line", "identity", "perf", "verdict", "unobserved", "findings", "atif"),
        *("capture", "invocations", "has_trajectory", "turns", "model_calls", "tool_calls", "gaps"),
    ]
    assert [f["targets"] for f in detail["findings"]] == [[["turn", 1]], [["model_call", 1]], [], None]
    assert [f["subject"] for f in detail["findings"]] == ["agent_turn", "model_call", "trajectory_capture", "rollout"]
    tool = detail["tool_calls"][0]
    assert tool["call"] == 0
    assert tool["turn"] == 0
    assert tool["arguments"] == json.dumps({"cmd": BREAKOUT}, separators=(",", ":"), ensure_ascii=False)
    assert tool["output"] == [(SCRIPT_TAG + LONG)[:EXCERPT_CHARS], len(SCRIPT_TAG + LONG)]
    assert [c["turn"] for c in detail["model_calls"]] == [0, 1]
    failed = detail["model_calls"][1]
    assert failed["successful"] is False
    assert failed["status_code"] == 500
    assert SCRIPT_TAG in failed["error"]
    gaps = {g["code"]: g for g in detail["gaps"]}
    assert gaps["turns_unavailable"]["meaning"] == GAPS["turns_unavailable"]
    assert all(g["meaning"] is None for code, g in gaps.items() if code not in GAPS)
    assert detail["atif"] == {"status": "exported", "file": "0-0.json", "refusal": None}
    assert detail["capture_file"] == "0-0.capture.jsonl"
    assert detail["line"] == 1
    assert entry["checks"] == ["agent_turn_hollow", "model_call_failed", "trajectory_capture_mismatch", "rollout_missing_agent_turns"]
    assert entry["verdict"] == "unhealthy"
    assert entry["findings"] == 4
    assert entry["turns"] == 2
    assert entry["tool_calls"] == 1
    assert entry["latency_ms"] == 15.5
    assert entry["prompt_tokens"] == 10
    assert entry["completion_tokens"] == 5


def _second_call_ids(model_call_id: str | None, response_id: str | None) -> dict[str, Any]:
    """The hostile row with its second model call (position 1, the failed one) renamed."""
    row = hostile_row(0, 0)
    call = row["ng_trajectory"]["model_calls"][1]
    call.pop("model_call_id")
    if model_call_id is not None:
        call["model_call_id"] = model_call_id
    call["response_metadata"]["response_id"] = response_id
    return row


@pytest.mark.parametrize(
    ("model_call_id", "response_id", "call_id", "targets"),
    [
        pytest.param(None, "resp-2", "resp-2", [["model_call", 1]], id="by-response-id"),
        pytest.param(None, None, "1", [["model_call", 1]], id="by-position"),
        pytest.param(None, None, "0", [["model_call", 0]], id="position-0-is-the-first-call"),
        pytest.param(None, None, "2", [], id="no-such-position"),
        pytest.param("0", None, "0", [["model_call", 1]], id="a-call-id-beats-a-position"),
        pytest.param("mc-2", "resp-1", "resp-1", [["model_call", 0], ["model_call", 1]], id="a-response-id-two-calls-share"),
        pytest.param("resp-1", None, "resp-1", [["model_call", 1]], id="a-call-id-beats-a-response-id"),
    ],
)
def test_a_call_finding_points_at_the_call_health_named(
    model_call_id: str | None, response_id: str | None, call_id: str, targets: list[list[Any]]
) -> None:
    """Health names a call by its model_call_id, else its response_id, else its position in
    ``ng_trajectory.model_calls`` (``CallView.locator``); the viewer looks in that order, and a
    name found at one level is not looked for at the next."""
    verdict = {"verdict": "unhealthy", "findings": [{"check": "model_call_failed", "locator": {"call_id": call_id}, "detail": {}}]}
    made = view(_second_call_ids(model_call_id, response_id), verdict)
    assert [finding["targets"] for finding in made.detail["findings"]] == [targets]


@pytest.mark.parametrize(
    ("locator", "targets"),
    [
        pytest.param({"tool_call_id": "tool-1"}, [["tool_call", 0]], id="a-tool-call"),
        pytest.param({"tool_call_id": "tool-2"}, [], id="no-such-tool-call"),
        pytest.param({"turn": 1, "tool_call_id": "tool-1"}, [["turn", 0], ["tool_call", 0]], id="a-turn-and-its-tool-call"),
        pytest.param({"turn": True}, [], id="a-bool-is-no-turn-number"),
        pytest.param({"call_id": 1}, [], id="a-call-id-that-is-no-string"),
        pytest.param({"line": 3}, [], id="a-locator-naming-nothing-here"),
    ],
)
def test_a_finding_points_at_tool_calls_and_turns_it_names(locator: dict[str, Any], targets: list[list[Any]]) -> None:
    """No 0.7.0 check writes a tool_call_id locator yet; the page points at the tool call when one does."""
    verdict = {"verdict": "unhealthy", "findings": [{"check": "made_up", "locator": locator, "detail": {}}]}
    assert [finding["targets"] for finding in view(hostile_row(0, 0), verdict).detail["findings"]] == [targets]


@pytest.mark.parametrize(
    ("asker", "call"),
    [
        pytest.param({"model_call_id": "mc-1", "response_id": "resp-1"}, 0, id="by-model-call-id"),
        pytest.param({"response_id": "resp-1"}, 0, id="by-response-id"),
        pytest.param({"model_call_id": "mc-2", "response_id": "resp-1"}, 1, id="the-call-id-first"),
        pytest.param({"model_call_id": "", "response_id": "resp-1"}, 0, id="an-empty-call-id-is-no-id"),
        pytest.param({"model_call_id": "elsewhere"}, None, id="no-such-call"),
        pytest.param({}, None, id="no-ids"),
    ],
)
def test_a_tool_call_names_the_model_call_that_asked_for_it(asker: dict[str, Any], call: int | None) -> None:
    """The captured call that asked for a tool is found in the trajectory by its model_call_id,
    else its response_id, as health names calls."""
    row = hostile_row(0, 0)
    captured = row["ng_model_call_capture"]["calls"][0]
    del captured["model_call_id"], captured["response_id"]
    captured.update(asker)
    assert view(row).detail["tool_calls"][0]["call"] == call


def test_decode_row_says_what_health_read_and_what_the_page_shows() -> None:
    assert decode_row(b'{"a": 1}') == ({"a": 1}, {"a": 1})
    assert decode_row(b'{"a": "\\ud800"}') == (None, {"a": "\ud800"})  # orjson refuses a lone surrogate; health calls the row unreadable
    assert decode_row(b"[1]") == (None, None)
    assert decode_row(b"{not json") == (None, None)


def test_a_row_that_is_no_object_still_has_a_page() -> None:
    made = view(None, None, atif_columns(None, "refused"))
    assert made.detail["readable"] is False
    assert made.detail["unreadable_line"] == "[1]"
    assert made.detail["turns"] == []
    assert made.entry["verdict"] is None
    assert made.entry["atif"] == "refused"


def test_ids_and_names_are_cut_short() -> None:
    row = hostile_row(0, 0)
    row["agent_ref"]["name"] = "n" * 10_000
    agent = view(row).entry["agent"]
    assert len(agent) == SHORT_CHARS + 1
    assert agent.endswith("\u2026")


def test_index_codes_repeated_strings_and_fills_detail_files() -> None:
    index = ViewerIndex(chunk_rollouts=2)
    chunks = [index.add(judged(hostile_row(0, n))) for n in range(5)]
    chunks.append(index.finish())
    written = [c for c in chunks if c is not None]
    assert (
        [c.name for c in written]
        == [chunk_name(0), chunk_name(1), chunk_name(2)]
        == ["rollouts-00000.js", "rollouts-00001.js", "rollouts-00002.js"]
    )
    document = index.document()
    assert document["chunks"] == [0, 2, 4]
    assert len(document["rows"]) == 5
    assert document["codes"]["agent"] == [hostile_row(0, 0)["agent_ref"]["name"]]
    for number, chunk in enumerate(written):
        match = re.fullmatch(rb"evidenceViewer\.chunk\((\d+),(\[.*\])\);\n", chunk.data, re.DOTALL)
        assert match is not None
        assert int(match.group(1)) == number
        assert b"<" not in chunk.data
        assert len(orjson.loads(match.group(2))) == (1 if number == 2 else 2)


def test_a_detail_file_ends_once_it_passes_its_byte_budget() -> None:
    index = ViewerIndex(chunk_bytes=1)
    assert index.add(judged(hostile_row(0, 0))) is not None
    assert index.finish() is None


def test_the_page_allows_its_own_script_by_hash_and_nothing_else() -> None:
    index = ViewerIndex()
    index.add(judged(hostile_row(0, 0)))
    page = render_viewer(index.document(), [chunk_name(0)], LINKS)
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}' 'strict-dynamic'" in viewer_csp()
    assert f'content="{viewer_csp()}"' in page
    assert f"<script>{SCRIPT}</script>" in page
    scripts = re.findall(r"<script[^>]*>", page)
    assert scripts == ['<script type="application/json" id="viewer-index">', "<script>"]
    assert page.count("</script>") == 2  # the data closes nothing early
    data = page.split('id="viewer-index">', 1)[1].split("</script>", 1)[0]
    document = json.loads(data)
    assert document["chunk_files"] == ["rollouts-00000.js"]
    assert document["links"] == LINKS
    assert not [text for text in HOSTILE if "<" in text and text in page]
    assert "agent \\u003cimg src=x" in data  # the hostile agent name is in the index, as an escape


class OneShotRows(list[list[Any]]):
    """Rows that can be read once, in order, as a spill's stream gives them to the page."""

    read = False

    def __iter__(self) -> Any:
        assert not self.read, "the page reads the rows once"
        self.read = True
        return super().__iter__()


def test_the_page_written_row_by_row_holds_the_whole_index_as_one_json_block() -> None:
    rows = OneShotRows()
    index, whole = ViewerIndex(rows=rows), ViewerIndex()
    for n in range(3):
        index.add(judged(hostile_row(0, n)))
        whole.add(judged(hostile_row(0, n)))
    pieces = list(viewer_page(index.document(), [chunk_name(0)], LINKS))
    expected = script_json({**whole.document(), "chunk_files": [chunk_name(0)], "links": LINKS})
    page = b"".join(pieces)
    assert index.count == 3
    assert len(pieces) > 3  # the rows came one by one, not as one block
    assert page.split(b'id="viewer-index">', 1)[1].split(b"</script>", 1)[0] == expected
    assert page.decode() == render_viewer(whole.document(), [chunk_name(0)], LINKS)
    empty = b"".join(viewer_page(ViewerIndex(rows=OneShotRows()).document(), [], LINKS))
    assert b'"rows":[],"chunks":[]' in empty


def test_the_script_holds_nothing_that_changes_how_a_page_parses_it() -> None:
    """Inside <script>, ``</`` could end the element and ``<!--`` with ``<script`` could keep it from ending."""
    assert "</" not in SCRIPT
    assert "<!--" not in SCRIPT
    assert "<script" not in SCRIPT.lower()


@pytest.mark.parametrize(
    "sink", ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "Function(", "srcdoc", 'setTimeout("']
)
def test_the_script_never_parses_data_as_markup_or_code(sink: str) -> None:
    assert sink not in SCRIPT


def test_the_page_draws_no_emoji() -> None:
    """The viewer renders where no emoji font is installed: its own text uses no pictographs."""
    page = render_viewer(ViewerIndex().document(), [], LINKS)
    pictographs = [
        ch for ch in page if ord(ch) >= 0x1F000 or 0x2600 <= ord(ch) <= 0x27BF or 0x2B00 <= ord(ch) <= 0x2BFF or ord(ch) == 0xFE0F
    ]
    assert pictographs == []
