"""Fuzz: structurally mutated real rows and capture files never break an attempt or a fold.

The mutator (``tests/mutation.py``) starts from every row and capture file of the example job
and the two sample jobs (and the samples' expected rows fed back as input), and swaps value
types, deletes, renames and adds keys, plants huge numbers (2^64, 2^64-1, -2^63-1, 1e308,
-1e308, 5e-324), 200-600 levels of nesting, lone surrogates (in capture lines), odd and empty
strings, duplicated items and keys, truncated and garbage capture lines. Each attempt is
processed as a main row (80%) or a sidecar row, encoded and decoded, its lines parsed; each
batch of 20 goes through the health, perf_summary, capabilities and ATIF folds and the report.

CI runs 3,000 mutated examples in 150 batches (four fixed seeds of 750): 30 s measured on the
2 shared cores of the development machine at load average 5 (10 s of CPU). The campaign
``tests/bench/fuzz_campaign.py`` runs the same examples by the ten thousand. The shapes it
found are kept below as regression cases.
"""

from __future__ import annotations

import gc
import random
from collections import Counter

import orjson
import pytest

from evidence import AtifFile, AttemptInputs, AttemptOutcome, AttemptPart, CaptureFiles, Status, encode_part, process_attempt
from evidence.atif import MULTIPLE_AGENTS_MESSAGE, NO_RECORDS_MESSAGE
from evidence.collect import CollectedRow, collect_row
from evidence.jsonl import orjson_line
from tests.mutation import CONFIG, Batch, Example, Seed, check_all_or_nothing, check_batch, examples, json_object, load_seeds

EXAMPLES_PER_SEED = 750
BATCH = 20


@pytest.fixture(scope="module")
def seeds() -> list[Seed]:
    return load_seeds()


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_mutated_attempts_keep_the_contract(seeds: list[Seed], seed: int) -> None:
    statuses: Counter[Status] = Counter()
    for batch in examples(random.Random(seed), seeds, EXAMPLES_PER_SEED, BATCH):
        statuses.update(outcome.status for outcome in check_batch(batch))
    assert statuses[Status.OK], "the mutations reach both collection and 0.7.0's refusals"
    assert statuses[Status.REJECTED], "the mutations reach both collection and 0.7.0's refusals"


def _planted(perf: dict) -> Example:
    """A main row without evidence (no trajectory, no capture), so its ``ng_perf`` is kept as given."""
    row = {"_ng_task_index": 0, "_ng_rollout_index": 0, "agent_ref": {"name": "agent"}, "reward": 0.0, "ng_perf": perf}
    return Example(orjson.dumps(row), None, 1)


def _surrogate_arguments() -> Example:
    """A main row whose one captured call answers with a function call whose arguments are ``{"x": "\\ud800"}``."""
    row = {"_ng_task_index": 1, "_ng_rollout_index": 0, "agent_ref": {"name": "agent"}, "reward": 1.0, "response": {"output": []}}
    call = {
        "model_call_id": "c1",
        "dialect": "responses",
        "status_code": 200,
        "request": {"input": [{"role": "user", "content": "Solve."}]},
        "response": {
            "id": "r1",
            "status": "completed",
            "output": [
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_1",
                    "name": "echo",
                    "arguments": '{"x": "\\ud800"}',
                    "status": "completed",
                },
            ],
        },
    }
    return Example(orjson.dumps(row), CaptureFiles(orjson.dumps(call), False), 1)


def _deep_reward(depth: int) -> Example:
    """A main row whose ``reward`` is a list nested ``depth`` levels (orjson parses rows to 1,024)."""
    row = b'{"_ng_task_index":0,"_ng_rollout_index":0,"agent_ref":{"name":"agent"},"reward":'
    return Example(row + b"[" * depth + b"0" + b"]" * depth + b"}", None, 1)


# Shapes the fuzz campaign found, one per fix: each broke the contract on the old code.
FOUND = {
    # The capability digest's tokens per turn overflowed to inf, which a part writes as null.
    "tokens_per_turn_overflow": [_planted({"completion_tokens": 1e308, "num_turns": 0.5})],
    # The report's latency histogram divided by a bin width that overflowed to inf.
    "latency_span_overflow": [_planted({"total_latency_ms": 1e308}), _planted({"total_latency_ms": -1e308})],
    # ... and by a bin width that underflowed to zero.
    "latency_span_underflow": [_planted({"total_latency_ms": 0.0}), _planted({"total_latency_ms": 5e-324})],
    # Found against 0.7.0 (differential run): tool-call arguments holding an escaped lone surrogate
    # decode into the enriched row, whose line (escaped again) orjson cannot read back; 0.7.0's
    # health reports that line as record_unreadable, the engine gave no health digest.
    "lone_surrogate_in_tool_arguments": [_surrogate_arguments()],
    # Found by the whole-run campaign (issue 45): a reward nested 990 levels rides in the score
    # digest, so the part's header is written exactly, and the stdlib parser reading it back
    # stopped at its recursion limit (the reduce failed the run).
    "reward_nested_990_levels": [_deep_reward(990)],
}


@pytest.mark.parametrize("name", sorted(FOUND))
def test_shapes_the_campaign_found_keep_the_contract(name: str) -> None:
    check_batch(Batch(CONFIG, FOUND[name]))


def test_all_or_nothing_replays_the_batch_export_where_every_row_converts(seeds: list[Seed]) -> None:
    """The fuzz batches meet refused rows; here every row converts: one agent (the batch's files),
    two agents and no rows (the batch's file-level errors)."""
    by_agent: dict[str | None, dict[tuple[int, int], Seed]] = {}
    for seed in seeds:
        atif = process_attempt(AttemptInputs(seed.row, seed.capture), CONFIG, main_line=1).main.atif
        if isinstance(atif, AtifFile):
            by_agent.setdefault(atif.agent, {}).setdefault(atif.key, seed)
    simple, harness = list(by_agent["simple_agent"].values()), list(by_agent["harness_agent"].values())
    for rows, error in ((simple, None), ([simple[0], harness[0]], MULTIPLE_AGENTS_MESSAGE), ([], NO_RECORDS_MESSAGE)):
        outcomes = [process_attempt(AttemptInputs(seed.row, seed.capture), CONFIG, main_line=n) for n, seed in enumerate(rows, start=1)]
        assert check_all_or_nothing(outcomes, CONFIG) == error


def _part(outcome: AttemptOutcome) -> bytes:
    return b"".join(encode_part(AttemptPart("fingerprint", 0.25, outcome)))


@pytest.mark.parametrize("seed", [5, 6])
def test_digests_of_the_enriched_row_equal_those_of_its_decoded_line(seeds: list[Seed], seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine reads the enriched row instead of parsing its line where it reads back as itself.

    On intact and mutated rows alike (non-finite floats, wide integers, deep nesting), and on
    captures whose fields become non-finite floats, the outcome is the one the parsed line
    gives, byte for byte once encoded.
    """
    mains = [example for batch in examples(random.Random(seed), seeds, 300, BATCH) for example in batch.examples if example.main_line]
    mains += _non_finite_captures(seeds)
    shortcut = [_part(process_attempt(AttemptInputs(e.row, e.capture), CONFIG, main_line=e.main_line)) for e in mains]
    taken = sum(1 for e in mains if _takes_shortcut(e))
    monkeypatch.setattr(CollectedRow, "decodes_to_itself", lambda self: False)
    parsed = [_part(process_attempt(AttemptInputs(e.row, e.capture), CONFIG, main_line=e.main_line)) for e in mains]
    assert shortcut == parsed
    assert 0 < taken < len(mains), "both routes are exercised"


# Capture fields that collection turns into non-finite floats: pydantic's lax mode reads "inf"
# and "nan" as floats, and two latencies of 1e308 sum past the largest double.
NON_FINITE_EXCHANGES = ({"latency_ms": "inf"}, {"latency_ms": 1e308}, {"started_at": "nan"}, {"latency_ttft_ms": "inf"})


def _non_finite_captures(seeds: list[Seed]) -> list[Example]:
    """Main rows of the seeds whose every capture line carries one of ``NON_FINITE_EXCHANGES``."""
    planted = []
    for seed in seeds:
        if seed.capture is None or not seed.capture.jsonl or seed.capture.jsonl.count(b"\n") < 2:
            continue
        for fields in NON_FINITE_EXCHANGES:
            exchanges = [json_object(line) for line in seed.capture.jsonl.splitlines()]
            lines = [orjson.dumps({**exchange, **fields}) for exchange in exchanges if exchange is not None]
            planted.append(Example(seed.row, CaptureFiles(b"\n".join(lines), seed.capture.incomplete), 1))
    return planted


def _takes_shortcut(example: Example) -> bool:
    try:
        collected = collect_row(orjson.loads(example.row), lambda _: example.capture)
    except orjson.JSONDecodeError:
        return False
    return collected.rejected is None and collected.decodes_to_itself() and orjson_line(collected.row) is not None


def test_attempts_leave_no_reference_cycles(seeds: list[Seed]) -> None:
    """Attempt workers run without the automatic collector (tasks.attempts.lifeline): an attempt must free
    everything by reference counting, or a group of long rows would hold them all."""
    attempts = [example for batch in examples(random.Random(8), seeds, 200, BATCH) for example in batch.examples]
    gc.collect()
    gc.disable()
    try:
        for example in attempts:
            process_attempt(AttemptInputs(example.row, example.capture), CONFIG, main_line=example.main_line)
            assert gc.collect() == 0, "the attempt left objects only the cycle collector frees"
    finally:
        gc.enable()
