"""Seeded structural mutations of real rows and capture files, and the attempt contract they must keep.

Issue 13's contract for the attempt engine and the run's folds: no exception escapes
``process_attempt``; every outcome encodes to a part that decodes to an equal outcome; every
written line (row, health files, perf_summary, capabilities, ATIF file and manifest line) is
valid JSON; the folds never raise on any sequence of outcomes. The fuzz test and the fuzz
campaign (``tests/bench/fuzz_campaign.py``) share this module: the campaign is the same
examples, many more of them.

Mutations start from the real rows and capture files of the bundled example job and the two
sample jobs (all in ``tests/data``), so a mutated row still looks like a row almost everywhere
and reaches deep into collection. One random ``Random(seed)`` drives everything: a seed always
gives the same examples.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from evidence import (
    AtifExportError,
    AtifFile,
    AtifRefusal,
    AttemptConfig,
    AttemptInputs,
    AttemptOutcome,
    AttemptPart,
    BatchRules,
    CaptureFiles,
    Exporter,
    FirstKeyWins,
    HealthFold,
    PerfSummaryFold,
    Status,
    build_capabilities,
    capture_file_id,
    decode_part,
    dumps,
    encode_part,
    export_rollouts,
    histogram_values,
    process_attempt,
    verdict_line,
    verdict_order,
)
from evidence.health import digest_lines
from evidence.health.reduce import identity_sizes
from evidence.health.registry import CHECK_IDS
from evidence.jsonl import deep_recursion
from evidence.perf_summary import InMemorySort
from evidence.report import ReportContext, render_report, report_markdown
from tests.conftest import EXAMPLE_JOB, SAMPLES

# (folder of the rows, job whose model-calls/ they name): the input jobs, and the sample jobs'
# expected outputs fed back as input (enriched rows with every ng_* field already present).
SEED_FILES = (
    (EXAMPLE_JOB, EXAMPLE_JOB),
    *((SAMPLES / job, SAMPLES / job) for job in ("hostile_job", "realistic_job")),
    *((SAMPLES / f"{job}.expected", SAMPLES / job) for job in ("hostile_job", "realistic_job")),
)
CONFIG = AttemptConfig(
    session_id="fuzz",
    agent_version="1.0.0",
    exporter=Exporter(name="evidence-stage", version="0.0.0-fuzz"),
    ignored_checks=(),
    verdict_source="rollouts.jsonl",
)

HUGE_NUMBERS: tuple[int | float, ...] = (2**64, 2**64 - 1, -(2**63) - 1, 1e308, -1e308, 5e-324, -0.0, 2**63)
ODD_STRINGS = ("", " ", "\u0000", "\ufeff", "\U0001f600", "\u202e", "null", "0", "-1", "../x", "a" * 300)
# Where mutations matter most: the evidence and the fields the digests read (listed twice:
# twice as likely), and the identity (a bad one is rejected early, so less often).
ROW_KEYS = (
    *("ng_trajectory", "ng_agent_observations", "ng_perf", "ng_model_call_capture", "agent_ref") * 2,
    "_ng_task_index",
    "_ng_rollout_index",
    "_ng_attempt_index",
    "_ng_rollout_id",
    "_ng_failure_class",
    "_ng_environment_server",
    "response",
    "reward",
)
CAPTURE_KEYS = (
    *("response", "request") * 2,
    "model_call_id",
    "dialect",
    "model_ref",
    "status_code",
    "error_category",
    "latency_ms",
    "started_at",
    "completed_at",
)
GARBAGE_LINES = (b"", b"  ", b"[]", b"3", b'"x"', b"null", b"\xff\xfe", b'{"a":NaN}', b"1e400", b"\xef\xbb\xbf{}")
LONE_SURROGATE = "\ud800"
MAX_DEPTH = 600

NodePath = tuple[Any, ...]
"""Keys and indexes from a value's root to one of its nodes."""


@dataclass(frozen=True)
class Seed:
    """One real input row with the capture files its rollout id names (None when there are none)."""

    row: bytes
    capture: CaptureFiles | None


def load_seeds() -> list[Seed]:
    """Every JSON-object row of the seed files' main and failures files, with its capture files."""
    seeds = []
    for rows, job in SEED_FILES:
        captures = job / "model-calls"
        for name in ("rollouts.jsonl", "rollouts_failures.jsonl"):
            source = rows / name
            if not source.exists():
                continue
            for line in source.read_bytes().splitlines():
                value = json_object(line)
                if value is not None:
                    seeds.append(Seed(line, _capture(captures, capture_file_id(value))))
    return seeds


def json_object(line: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _capture(folder: Path, rollout_id: str | None) -> CaptureFiles | None:
    if rollout_id is None:
        return None
    jsonl, incomplete = folder / f"{rollout_id}.capture.jsonl", folder / f"{rollout_id}.capture.incomplete"
    if not jsonl.exists() and not incomplete.exists():
        return None
    return CaptureFiles(jsonl.read_bytes() if jsonl.exists() else None, incomplete.exists())


class Mutator:
    """Random structural mutations of JSON values, row lines and capture files."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    # -- values -------------------------------------------------------------------------------

    def value(self, root: Any, focus: tuple[str, ...], *, surrogates: bool) -> Any:
        """``root`` with 1-4 mutations (5-15 in one value of five) at random positions, biased to
        ``focus`` keys; changed in place.

        Nothing is deep-copied (a copy of a deeply nested value would overflow the stack); a
        subtree may be shared by two positions, which a JSON writer does not mind.
        """
        for _ in range(self.rng.randint(1, 4) if self.rng.random() < 0.8 else self.rng.randint(5, 15)):
            root = self._mutate_at(root, self._path(root, focus), surrogates=surrogates)
        return root

    def _path(self, root: Any, focus: tuple[str, ...]) -> NodePath:
        """A random node: the root's focus keys first, then a random descent."""
        path: list[Any] = []
        node = root
        if isinstance(node, dict) and self.rng.random() < 0.7:
            present = [key for key in focus if key in node]
            if present:
                key = self.rng.choice(present)
                path.append(key)
                node = node[key]
        while isinstance(node, (dict, list)) and node and self.rng.random() < 0.85:
            key = self.rng.choice(list(node)) if isinstance(node, dict) else self.rng.randrange(len(node))
            path.append(key)
            node = node[key]
        return tuple(path)

    def _mutate_at(self, root: Any, path: NodePath, *, surrogates: bool) -> Any:
        if not path:
            return self._mutate_node(root, surrogates=surrogates, at_root=True)
        parent = root
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        if self.rng.random() < 0.15:
            del parent[key]
            return root
        parent[key] = self._mutate_node(parent[key], surrogates=surrogates, at_root=False)
        return root

    def _mutate_node(self, node: Any, *, surrogates: bool, at_root: bool) -> Any:
        """A replacement for ``node``: same container changed, or another value."""
        rng = self.rng
        choice = rng.random()
        if isinstance(node, dict) and choice < 0.35:
            return self._edit_dict(node)
        if isinstance(node, list) and choice < 0.35:
            return self._edit_list(node)
        if at_root:  # a row stays a JSON object
            return self._edit_dict(node) if isinstance(node, dict) else {}
        if choice < 0.55:
            return self.other_type(node)
        if choice < 0.7:
            return rng.choice(HUGE_NUMBERS)
        if choice < 0.8:
            return self.nest(node if rng.random() < 0.5 else rng.choice([0, "x", None, {}]))
        if isinstance(node, str) and surrogates and choice < 0.9:
            cut = rng.randint(0, len(node))
            return node[:cut] + LONE_SURROGATE + node[cut:]
        return rng.choice(ODD_STRINGS)

    def _edit_dict(self, node: dict[str, Any]) -> dict[str, Any]:
        rng = self.rng
        node = dict(node)
        action = rng.randrange(4)
        if action == 0 and node:
            del node[rng.choice(list(node))]
        elif action == 1:
            node[f"unknown_{rng.randrange(1000)}"] = self.other_type(None)
        elif action == 2 and node:
            key = rng.choice(list(node))
            node[rng.choice(["", key.upper(), key + " ", key + "\u00e9"])] = node.pop(key)
        else:
            return {}
        return node

    def _edit_list(self, node: list[Any]) -> list[Any]:
        rng = self.rng
        node = list(node)
        action = rng.randrange(5)
        if action == 0 and node:
            node.insert(rng.randrange(len(node) + 1), rng.choice(node))
        elif action == 1 and node:
            del node[rng.randrange(len(node))]
        elif action == 2:
            node.append(self.other_type(None))
        elif action == 3:
            rng.shuffle(node)
        else:
            node = node + node
        return node

    def other_type(self, node: Any) -> Any:
        """A value of another JSON type than ``node``, sometimes built from it."""
        rng = self.rng
        makers: list[Callable[[], Any]] = [
            lambda: rng.choice(["", "x", dumps(node)[:40].decode("utf-8", "replace")]),  # no repr: node may be deep
            lambda: rng.choice([0, 1, -1, 7]),
            lambda: rng.choice([[], [node], [node, node]]),
            lambda: rng.choice([{}, {"k": node}, {"type": node}]),
            lambda: None,
            lambda: rng.choice([True, False]),
            lambda: rng.choice([0.5, -2.5, 1e-9]),
        ]
        kinds = (str, int, list, dict, type(None), bool, float)
        options = [make for make, kind in zip(makers, kinds, strict=True) if type(node) is not kind]
        return rng.choice(options)()

    def nest(self, leaf: Any) -> Any:
        """``leaf`` nested 200-600 levels in lists and objects."""
        value = leaf
        for _ in range(self.rng.randint(200, MAX_DEPTH)):
            value = [value] if self.rng.random() < 0.5 else {"a": value}
        return value

    # -- rows ---------------------------------------------------------------------------------

    def row(self, line: bytes) -> bytes:
        """A mutated row line: still a JSON object orjson parses (what discovery hands over)."""
        for _ in range(8):
            mutated = self.value(orjson.loads(line), ROW_KEYS, surrogates=False)
            text = dumps(mutated)
            if self.rng.random() < 0.1:
                text = self._duplicate_key(text, mutated)
            if json_object(text) is not None:
                return text
        return line

    def _duplicate_key(self, text: bytes, value: dict[str, Any]) -> bytes:
        """The object's text with one of its keys written twice (orjson keeps the last)."""
        if not value:
            return text
        key = self.rng.choice(list(value))
        return b"{" + dumps(key) + b":" + dumps(self.other_type(value[key])) + (b"," if text != b"{}" else b"") + text[1:]

    # -- captures -----------------------------------------------------------------------------

    def capture(self, files: CaptureFiles | None) -> CaptureFiles | None:
        """Mutated capture files: damaged lines, mutated records, or another files state."""
        rng = self.rng
        state = rng.random()
        if state < 0.05:
            return None
        if state < 0.1:
            return CaptureFiles(jsonl=None, incomplete=True)
        if state < 0.13:
            return CaptureFiles(jsonl=None, incomplete=False, unreadable=True)
        if files is None or not files.jsonl:
            return files if rng.random() < 0.5 else CaptureFiles(b"", rng.random() < 0.5)
        lines = files.jsonl.split(b"\n")
        for _ in range(rng.randint(1, 3)):
            if not lines:
                break
            index = rng.randrange(len(lines))
            lines[index : index + 1] = self._capture_lines(lines[index])
        jsonl = b"\n".join(lines)
        return CaptureFiles(jsonl, files.incomplete if rng.random() < 0.8 else not files.incomplete)

    def _capture_lines(self, line: bytes) -> list[bytes]:
        rng = self.rng
        action = rng.randrange(10)
        if action == 0:
            return [line[: rng.randint(0, len(line))]]  # truncated (a write cut short)
        if action == 1:
            return [line, line]
        if action == 2:
            return []
        if action == 3:
            return [rng.choice(GARBAGE_LINES)]
        if action == 4:
            return [self._surrogate_escape(line)]
        record = json_object(line)
        if record is None:
            return [line]
        return [dumps(self.value(record, CAPTURE_KEYS, surrogates=True))]

    def _surrogate_escape(self, line: bytes) -> bytes:
        """The line with a ``\\ud800`` escape inside its first string (orjson refuses the line)."""
        quote = line.find(b'":"')
        return line if quote < 0 else line[: quote + 3] + b"\\ud800" + line[quote + 3 :]


# -- the contract -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    """One attempt's input: a row line, its capture files, and its main line (None for a sidecar)."""

    row: bytes
    capture: CaptureFiles | None
    main_line: int | None


@dataclass(frozen=True)
class Batch:
    """Attempts of one run, in input order, and the run's parameters."""

    config: AttemptConfig
    examples: list[Example]


def examples(rng: random.Random, seeds: list[Seed], count: int, batch: int) -> Iterator[Batch]:
    """``count`` mutated attempts in batches of ``batch`` (some rows left intact, as in a real job).

    A batch sometimes sets one field on several rows to odd values, so run-level folds meet them
    together (two ``1e308`` turn counts, 2^64-1 token counts, latencies of 1e308 and -1e308).
    """
    mutator = Mutator(rng)
    made = 0
    while made < count:
        size = min(batch, count - made)
        chosen = [rng.choice(seeds) for _ in range(size)]
        shared = _shared_mutation(rng) if rng.random() < 0.3 else None
        out = []
        for position, seed in enumerate(chosen, start=1):
            roll = rng.random()
            row = mutator.row(seed.row) if 0.1 <= roll < 0.7 else seed.row
            if shared is not None:
                row = shared(row)
            capture = mutator.capture(seed.capture) if roll >= 0.4 else seed.capture
            main_line = position if rng.random() < 0.8 else None
            out.append(Example(row, capture, main_line))
        made += size
        yield Batch(_config(rng), out)


def _config(rng: random.Random) -> AttemptConfig:
    """The fuzz run's parameters, with a few health checks ignored in one batch of four."""
    ignored = tuple(rng.sample(CHECK_IDS, rng.randint(1, 3))) if rng.random() < 0.25 else ()
    return dataclasses.replace(CONFIG, ignored_checks=ignored)


def _shared_mutation(rng: random.Random) -> Callable[[bytes], bytes]:
    """A key path set on every row of a batch that has the path's parent, to one of two values."""
    path = rng.choice(
        [
            ("ng_perf", "num_turns"),
            ("ng_perf", "prompt_tokens"),
            ("ng_perf", "completion_tokens"),
            ("ng_perf", "total_latency_ms"),
            ("ng_perf", "token_observability_coverage"),
            ("_ng_task_index",),
            ("_ng_rollout_index",),
            ("agent_ref", "name"),
            ("_ng_environment_server",),
        ]
    )
    values = rng.sample([*HUGE_NUMBERS, True, "x", None, [1], {"a": 1}], 2)

    def apply(line: bytes) -> bytes:
        row = orjson.loads(line)
        parent = row
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if not isinstance(parent, dict):
            return line
        parent[path[-1]] = rng.choice(values)
        return dumps(row)

    return apply


def parse(text: bytes | str) -> Any:
    """``json.loads`` with room for the deepest value orjson reads (1,024 levels) plus what
    collection wraps around it: the default recursion limit stops the stdlib parser near 1,000."""
    with deep_recursion():
        return json.loads(text)


def check_batch(batch: Batch) -> list[AttemptOutcome]:
    """Every attempt of ``batch`` and every fold over them; raises when the contract is broken.

    Returns the decoded outcomes (what the reduce reads).
    """
    decoded = [check_attempt(example, batch.config) for example in batch.examples]
    check_folds([outcome for outcome in decoded if outcome.main is not None], batch.config)
    return decoded


def check_attempt(example: Example, config: AttemptConfig = CONFIG) -> AttemptOutcome:
    """One attempt: processed, written, encoded and decoded; the decoded outcome."""
    outcome = process_attempt(AttemptInputs(example.row, example.capture), config, main_line=example.main_line)
    assert isinstance(outcome.status, Status), f"status: {outcome.status!r}"
    assert (outcome.reason is None) == (outcome.status is Status.OK), f"reason: {outcome.status} {outcome.reason!r}"
    assert (outcome.main is None) == (example.main_line is None), "main digests: present exactly for a main row"
    if outcome.status is Status.REJECTED:
        assert outcome.line == example.row, "line: a rejected row is written unchanged"
    assert isinstance(parse(outcome.line), dict), "line: not a JSON object"
    part = AttemptPart("fingerprint", 0.25, outcome)
    back = decode_part(b"".join(encode_part(part)))
    with deep_recursion():  # == walks a deep reward or identity recursively too
        assert back == part, "roundtrip: the decoded part differs"
    if outcome.main is not None and isinstance(outcome.main.atif, AtifFile):
        parse(b"".join(outcome.main.atif.text))
        parse(outcome.main.atif.manifest_line)
    if outcome.main is not None:
        assert outcome.main.health == health_of_line(outcome.line, example.main_line, config), (
            "health: not the drop-in's digest of the written line"
        )
    return back.outcome


NOT_COMPARED = "not compared: the batch export stopped on a row our converter failed on"


def check_all_or_nothing(outcomes: list[AttemptOutcome], config: AttemptConfig) -> str | None:
    """An all-or-nothing run replays 0.7.0's batch export from its attempts' ATIF digests: the
    replay must fail with the drop-in's text over the written main lines, or accept the files and
    manifest it writes. Returns the replay's error, or ``NOT_COMPARED`` where the drop-in stops on
    a row our own converter failed on (0.7.0 stops there too, with a traceback)."""
    mains = [outcome for outcome in outcomes if outcome.main is not None]
    data = b"".join(bytes(outcome.line) + b"\n" for outcome in mains)
    if any(isinstance(main.main.atif, AtifRefusal) and main.main.atif.message.startswith("conversion failed: ") for main in mains):
        return NOT_COMPARED
    try:
        expected: Any = export_rollouts(data, session_id=config.session_id, agent_version=config.agent_version, exporter=config.exporter)
    except AtifExportError as error:
        expected = error.message
    rules, refused, files = BatchRules(), [], []
    for number, outcome in enumerate(mains, start=1):
        atif = outcome.main.atif
        if isinstance(atif, AtifFile):
            text = rules.replay(number, atif.key, atif.agent, None)
            files.append((atif.name, b"".join(atif.chunks())))
        else:
            text = rules.replay(number, atif.key, None, atif.message)
        if text is not None:
            refused.append(text)
    error = rules.error(refused)
    if isinstance(expected, str):
        assert error == expected, f"all-or-nothing: {error!r} where the batch export says {expected!r}"
    else:
        assert error is None, "all-or-nothing: not the batch export's files"
        assert files == expected[:-1], "all-or-nothing: not the batch export's files"
        manifest = b"".join(outcome.main.atif.manifest_line + b"\n" for outcome in mains if isinstance(outcome.main.atif, AtifFile))
        assert expected[-1] == ("manifest.jsonl", manifest), "all-or-nothing: not the batch export's manifest"
    return error


def health_of_line(line: bytes, main_line: int, config: AttemptConfig) -> Any:
    """The ``health`` drop-in's digest of ``line`` as line ``main_line`` of a rollouts file (the
    lines before it readable objects, so its ordinal is ``main_line - 1``): what 0.7.0's health
    check says of the written row; None where the check itself fails on it (the engine reports
    that failure and has no digest either)."""
    lines = b"{}\n" * (main_line - 1) + line
    try:
        return list(digest_lines(lines, source=config.verdict_source, ignored=config.ignored_checks))[-1]
    except Exception:  # noqa: BLE001 - compared with the engine's missing digest
        return None


def check_folds(outcomes: list[AttemptOutcome], config: AttemptConfig = CONFIG) -> None:
    """The run's folds over main outcomes in input order, as the reduce runs them, and the report
    rendered from their files as the run's end reads them back."""
    mains = [outcome.main for outcome in outcomes if outcome.main is not None]
    healths = [main.health for main in mains if main.health is not None]
    fold = HealthFold(config.ignored_checks, identity_sizes(healths))
    reported = [fold.add(digest) for digest in healths]
    summary = fold.summary_text().encode()
    for digest in sorted(reported, key=verdict_order):
        parse(verdict_line(digest))

    perf = PerfSummaryFold(InMemorySort())
    for main in mains:
        if main.perf is not None:
            perf.add(main.perf.group, main.perf.record)
    perf_text = dumps(perf.document(), indent=True)
    assert all(isinstance(problem, str) for problem in perf.problems), "perf problems: not text"

    digests = [main.capability for main in mains if main.capability is not None]
    capabilities = dumps(build_capabilities(digests), indent=True)
    histograms = histogram_values(digests)
    parse(dumps(histograms))

    keys = FirstKeyWins()
    for main in mains:
        if isinstance(main.atif, AtifFile):
            keys.refusal(main.atif.key)
    check_all_or_nothing(outcomes, config)

    documents = [_reread(text) for text in (summary, perf_text, capabilities)]
    latency, tokens_per_turn = histograms["latency_ms"], histograms["tokens_per_turn"]
    context = ReportContext("job", "run", "start", "end", {}, {}, *documents, latency, tokens_per_turn, [])
    render_report(context)
    report_markdown(context)


def _reread(text: bytes) -> Any:
    """A written document as the run's end reads it back (orjson), once checked to be JSON."""
    parse(text)
    return orjson.loads(text)
