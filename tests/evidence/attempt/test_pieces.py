"""A long attempt is written and decoded in pieces: its outcome is the one written whole.

Every real seed row and 400 mutated ones (deep nesting, wide integers, lone surrogates, shared
and odd shapes: ``tests/mutation.py``) are processed twice, once with every attempt counted as
long, and their encoded parts compared byte for byte.
"""

from __future__ import annotations

import random

import pytest

from evidence import AttemptInputs, AttemptPart, CaptureFiles, encode_part, process_attempt
from evidence.attempt import process
from tests.mutation import CONFIG, examples, load_seeds


def _part(row: bytes, capture: CaptureFiles | None, main_line: int | None) -> bytes:
    return b"".join(encode_part(AttemptPart("f", 0.0, process_attempt(AttemptInputs(row, capture), CONFIG, main_line=main_line))))


def test_pieces_give_the_whole_outcome(monkeypatch: pytest.MonkeyPatch) -> None:
    seeds = load_seeds()
    cases = [(seed.row, seed.capture, 1) for seed in seeds]
    for batch in examples(random.Random(7), seeds, 400, 20):
        cases.extend((example.row, example.capture, example.main_line) for example in batch.examples)
    whole = [_part(*case) for case in cases]
    monkeypatch.setattr(process, "LONG_INPUTS_BYTES", 0)
    assert [_part(*case) for case in cases] == whole
