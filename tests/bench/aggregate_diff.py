"""Differential check, by hand: our aggregate-metrics fold against NeMo Gym 0.7.0 (the oracle).

Usage (from the repository root; the oracle interpreter from ../shared/oracle/setup.sh):

    .venv/bin/python tests/bench/aggregate_diff.py [--quick] [--fuzz N] [--seed S] [--workdir DIR]
    .venv/bin/python tests/bench/aggregate_diff.py --write-golden tests/data/aggregate_metrics_0_7_0.json

Cases: hand-written edge cases (duplicates, missing and odd indices, reward types, usage,
extremes, masks, labels, perf errors), random small groups (``--fuzz``), and jobs from
``tests/jobgen.py`` enriched by the oracle's ``ref_collect.py`` (ng_perf and all), each in
several mask variants (none, a random quarter, one whole task per group, one whole group,
everything). A case's masked rows get ``mask_sample: true`` in the file the oracle reads and
``masked=True`` in our fold (the health-gated path), over otherwise identical rows.

The oracle runs ``ref_aggregate.main`` on every case file in one process of the oracle
interpreter (the script's own code; one start-up for all cases); we run the fold over the
same rows parsed the same way (orjson), with ``perf_summary`` from ``PerfSummaryFold`` as the
stage computes it. Compared: the file's bytes (then the first strict difference) and the
groups left out with their exception type and message. Both sides run with
``PYTHONHASHSEED=0`` (0.7.0's error text for unorderable keys follows set order).

Prints one JSON line per differing case and a last summary line: cases, groups, rows,
identical, differing, oracle crashes (0.7.0 aborts the whole file; listed, not compared).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from evidence import AggregateMetricsFold, dumps_aggregate_metrics, score_digest  # noqa: E402
from evidence.perf_summary import InMemorySort, PerfSummaryFold, perf_group, summary_input  # noqa: E402
from tests.jobgen import generate_job  # noqa: E402

ORACLE_DIR = REPO.parent / "shared" / "oracle"
DEFAULT_ORACLE_VENV = REPO.parent / ".venv-gym"
T, R = "_ng_task_index", "_ng_rollout_index"
DRIVER = """
import contextlib, io, sys, traceback, orjson
sys.path.insert(0, sys.argv[1])
import ref_aggregate
for line in open(sys.argv[2], "rb"):
    src, dst = orjson.loads(line)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ref_aggregate.main(src, dst)
    except Exception as exc:
        err.write(f"CRASH {type(exc).__name__}: {exc}\\n")
    open(dst + ".err", "w").write(err.getvalue())
"""


@dataclass
class Case:
    """Rows as the oracle reads them, minus the masks; ``masked`` row positions get masked."""

    name: str
    rows: list[dict[str, Any]]
    masked: frozenset[int] = frozenset()
    description: str = ""
    golden: bool = False

    def oracle_rows(self) -> Iterator[dict[str, Any]]:
        for i, row in enumerate(self.rows):
            yield {**row, "mask_sample": True} if i in self.masked else row


@dataclass
class Outcome:
    data: bytes | None
    refusals: list[str] = field(default_factory=list)
    crash: str | None = None


def ours(case: Case) -> Outcome:
    """The stage's path: digests and perf digests per row, one fold, masks as overrides."""
    fold, perf = AggregateMetricsFold(), PerfSummaryFold(InMemorySort())
    for i, row in enumerate(case.rows):
        perf.add(perf_group(row), summary_input(row.get("ng_perf")))
        fold.add(score_digest(row), masked=i in case.masked)
    result = fold.result(perf.document()["groups"], perf.problems)
    refusals = [f"group {r.group!r} refused by 0.7.0: {r.error}: {r.message}" for r in result.refusals]
    return Outcome(dumps_aggregate_metrics(result.document), refusals)


def oracle(cases: list[Case], workdir: Path, venv: Path) -> dict[str, Outcome]:
    """Every case through ``ref_aggregate.main`` in one oracle process."""
    pairs = []
    for case in cases:
        src = workdir / f"{case.name}.jsonl"
        src.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in case.oracle_rows()))
        pairs.append((str(src), str(workdir / f"{case.name}.oracle.json")))
    listing = workdir / "pairs.jsonl"
    listing.write_bytes(b"".join(orjson.dumps(pair) + b"\n" for pair in pairs))
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run([str(venv / "bin" / "python"), "-c", DRIVER, str(ORACLE_DIR), str(listing)], check=True, env=env)
    outcomes = {}
    for case, (_, dst) in zip(cases, pairs, strict=True):
        lines = Path(dst + ".err").read_text().splitlines()
        crash = next((line for line in lines if line.startswith("CRASH ")), None)
        data = None if crash else Path(dst).read_bytes()
        outcomes[case.name] = Outcome(data, [line for line in lines if " refused by 0.7.0: " in line], crash)
    return outcomes


def first_difference(expected: Any, actual: Any) -> str | None:
    sys.path.insert(0, str(ORACLE_DIR))
    from strict_eq import first_difference as strict_first_difference

    return strict_first_difference(expected, actual)


# ---------------------------------------------------------------- hand-written cases


def row(t: Any = None, r: Any = None, agent: Any = "ag", **fields: Any) -> dict[str, Any]:
    """A stripped-down main row; None leaves an index out."""
    out: dict[str, Any] = {}
    if t is not None:
        out[T] = t
    if r is not None:
        out[R] = r
    if agent is not None:
        out["agent_ref"] = {"type": "responses_api_agents", "name": agent}
    return out | fields


def usage(i: int, o: int, **extra: Any) -> dict[str, Any]:
    return {"usage": {"input_tokens": i, "output_tokens": o, "total_tokens": i + o, **extra}}


def perf(latency: Any, **extra: Any) -> dict[str, Any]:
    return {"total_latency_ms": latency, **extra}


def grid(tasks: int, repeats: int, rng: random.Random, **fixed: Any) -> list[dict[str, Any]]:
    rows = []
    for t in range(tasks):
        for r in range(repeats):
            ok = rng.random() < 0.5
            rows.append(
                row(
                    t,
                    r,
                    reward=1.0 if ok else 0.0,
                    resolved=ok,
                    response=usage(rng.randint(50, 900), rng.randint(5, 400)),
                    ng_perf=perf(round(rng.uniform(100, 9000), 3), num_turns=rng.randint(1, 9)),
                    **fixed,
                )
            )
    return rows


def hand_cases() -> list[Case]:
    rng = random.Random(20260701)
    cases = [
        Case("basic_repeats", grid(3, 4, rng), description="3 tasks x 4 repeats, float reward, bool resolved, usage, ng_perf", golden=True),
        Case("single_rollouts", grid(5, 1, rng), description="one rollout per task: no repeat-level metrics", golden=True),
        Case("masked_subset", grid(4, 3, rng), frozenset({0, 4, 5, 11}), "some rows masked: coverage keys", golden=True),
        Case("masked_whole_task", grid(3, 3, rng), frozenset({3, 4, 5}), "every rollout of task 1 masked", golden=True),
        Case("masked_everything", grid(2, 2, rng), frozenset(range(4)), "all rows masked: coverage only", golden=True),
        Case(
            "masked_whole_repeat",
            [
                row(
                    t,
                    r,
                    reward=float((t + r) % 2),
                    resolved=(t + r) % 2 == 1,
                    response=usage(100 + 10 * t, 5 + r),
                    ng_perf=perf(1000.0 + 100 * t + r),
                )
                for t in range(3)
                for r in range(3)
            ],
            frozenset({1, 4, 7}),
            "rollout 1 of every task masked, the group keeps other scored rows: num_repeats still counts it",
            golden=True,
        ),
        Case(
            "int_bool_columns",
            [
                row(0, 0, reward=1, passed=True, steps=3),
                row(0, 1, reward=0, passed=False, steps=5),
                row(1, 0, reward=1, passed=True, steps=2),
            ],
            description="int-only columns keep int max/min",
            golden=True,
        ),
        Case(
            "int_and_float",
            [row(0, 0, reward=1, score=0.25), row(0, 1, reward=0, score=0.5), row(1, 1, reward=1, score=1.5)],
            description="an int column beside a float one: max/min become floats",
            golden=True,
        ),
        Case(
            "reward_kinds",
            [
                row(0, 0, reward=True),
                row(0, 1, reward=0.5),
                row(0, 2, reward=1),
                row(1, 0),
                row(1, 1, reward=None),
                row(1, 2, reward="n/a"),
                row(2, 0, reward=False),
                row(2, 2, reward=0.75),
            ],
            description="bool, float, int, missing, null and string rewards",
            golden=True,
        ),
        Case(
            "duplicate_key",
            [row(0, 0, reward=1.0), row(0, 1, reward=0.0), row(0, 0, reward=0.5), row(1, 0, reward=1.0, agent="other")],
            description="a duplicate (task, rollout) in group ag: left out",
            golden=True,
        ),
        Case(
            "duplicate_with_masked",
            [row(0, 0, reward=1.0), row(0, 0, reward=0.0), row(1, 0, reward=1.0)],
            frozenset({1}),
            "a scored row shares a masked row's key: extra-rows error",
            golden=True,
        ),
        Case("duplicate_both_masked", [row(0, 0, reward=1.0), row(0, 0, reward=0.0), row(1, 0, reward=1.0)], frozenset({0, 1})),
        Case(
            "missing_indices",
            [row(reward=1.0), row(None, 1, reward=0.0), row(2, None, reward=0.5)],
            description="absent indices read as 0",
            golden=True,
        ),
        Case("missing_indices_duplicate", [row(reward=1.0), row(reward=0.0)]),
        Case("null_indices", [row(None, 0, reward=1.0, **{T: None}), row(None, 1, reward=0.0, **{T: None})]),
        Case("null_mixed", [row(None, 0, reward=1.0, **{T: None}), row(1, 1, reward=0.0)]),
        Case("string_tasks", [row("a", 0, reward=1.0), row("b", 1, reward=0.0), row("a", 1, reward=0.5)]),
        Case("string_and_int_tasks", [row("a b", 0, reward=1.0), row(1, 0, reward=0.0)]),
        Case("string_rollout", [row(0, "x", reward=1.0), row(1, 0, reward=0.0), row(1, 1, reward=1.0)]),
        Case("float_and_bool_indices", [row(1.0, 0, reward=1.0), row(2, True, reward=0.0), row(2, 0, reward=0.5)]),
        Case("list_index", [row([1], 0, reward=1.0), row(1, 0, reward=0.0)]),
        Case("list_index_masked", [row([1], 0, reward=1.0), row(1, 0, reward=0.0)], frozenset({0})),
        Case(
            "usage_list",
            [row(0, 0, reward=1.0, response={"usage": [1, 2]}), row(0, 1, reward=0.0)],
            description="a usage that is not an object: AttributeError",
            golden=True,
        ),
        Case("usage_list_masked", [row(0, 0, reward=1.0, response={"usage": "x"}), row(0, 1, reward=0.0)], frozenset({0})),
        Case(
            "usage_falsy",
            [
                row(0, 0, reward=1.0, response={"usage": 0}),
                row(0, 1, reward=0.0, response={"usage": []}),
                row(0, 2, reward=0.0, response="text"),
            ],
        ),
        Case(
            "usage_overrides",
            [
                row(0, 0, total_tokens=None, reward=1.0, response=usage(3, 4, _x=9, flag=True)),
                row(0, 1, total_tokens=99, input_tokens="many", reward=0.0, response=usage(5, 6)),
            ],
            description="usage beats top-level columns; top-level beats usage in rollout_infos",
            golden=True,
        ),
        Case(
            "mask_sample_values",
            [
                row(0, 0, reward=1.0, mask_sample=1),
                row(0, 1, reward=0.0, mask_sample="yes"),
                row(0, 2, reward=1.0, mask_sample=0),
                row(1, 0, reward=1.0, mask_sample=[]),
                row(1, 1, reward=0.5, mask_sample=False),
            ],
        ),
        Case(
            "extreme_floats",
            [row(0, 0, reward=1e308), row(0, 1, reward=-1e308), row(1, 0, reward=1e308)],
            description="a 64-bin histogram of [-1e308, 1e308]: ValueError",
            golden=True,
        ),
        Case("constant_big", [row(0, 0, stamp=1e17), row(0, 1, stamp=1e17)], description="a constant 1e17 column: bins too narrow"),
        Case("constant_big_int", [row(0, 0, stamp=1771800000123456789), row(1, 0, stamp=1771800000123456789)]),
        Case("near_int53", [row(0, 0, x=2**53), row(0, 1, x=2**53 + 1), row(1, 0, x=3)]),
        Case(
            "int64_edges",
            [row(0, 0, x=2**63 - 1), row(0, 1, x=-(2**63)), row(1, 0, x=0)],
            description="int64's extremes in one column: int64 arithmetic that wraps",
            golden=True,
        ),
        Case("uint64", [row(0, 0, x=2**64 - 1), row(0, 1, x=0)], description="a uint64 column", golden=True),
        Case(
            "uint64_negative",
            [row(0, 0, x=2**64 - 1), row(0, 1, x=-1)],
            description="2**64 - 1 beside -1: an object column, pandas' DataFrame reductions (the exotic-column path)",
            golden=True,
        ),
        Case("tiny_range", [row(0, 0, x=1.0), row(0, 1, x=math.nextafter(1.0, 2.0)), row(1, 0, x=5e-324), row(1, 1, x=-0.0)]),
        Case("overflow_mean", [row(0, 0, x=1.7e308), row(0, 1, x=1.7e308), row(1, 0, x=1.0)]),
        Case(
            "perf_overflow",
            [row(0, 0, reward=1.0, ng_perf=perf(1e308)), row(0, 1, reward=0.0, ng_perf=perf(1e308))],
            description="0.7.0 raises on the perf_summary: the group is left out",
            golden=True,
        ),
        Case("perf_bools", [row(0, 0, reward=1.0, ng_perf=perf(True)), row(0, 1, reward=0.0, ng_perf=perf(False))]),
        Case(
            "incomplete_repeats",
            [
                row(0, 0, reward=1.0),
                row(0, 1, reward=0.0),
                row(0, 2, reward=1.0),
                row(1, 0, reward=0.5),
                row(2, 1, reward=0.25),
                row(2, 2, q=3),
            ],
            description="repeats missing some tasks, a column only in a later repeat",
            golden=True,
        ),
        Case(
            "odd_field_names",
            [
                row(0, 0, **{"score/max": 1.0, "a{b}": 2, "mean": 3.0, "reward": 1.0}),
                row(0, 1, **{"score/max": 0.0, "a{b}": 4, "mean": 1.0, "reward": 0.0}),
            ],
        ),
        Case("agent_name_field", [row(0, 0, reward=1.0, agent_name=5), row(0, 1, reward=0.0)]),
        Case("no_numbers", [row(0, 0, note="x"), row(0, 1), row(1, 0, note="y")]),
        Case(
            "servers_and_labels",
            [
                row(0, 0, reward=1.0, _ng_environment_server="env_a", agent="shared"),
                row(0, 0, reward=0.0, _ng_environment_server="env_b", agent="shared"),
                row(0, 0, reward=0.5, agent="solo"),
                row(0, 0, reward=0.5, _ng_environment_server="solo", agent="x"),
                row(1, 0, reward=1.0, _ng_environment_server="env_c", agent="env_a"),
                row(0, 1, reward=1.0, _ng_environment_server="env_d", agent="lonely"),
                row(0, 0, reward=1.0, _ng_environment_server=7, agent="int_stamp"),
                row(0, 0, reward=1.0, agent=None),
            ],
            description="several servers: labels by agent when unique, else by server",
            golden=True,
        ),
        Case("empty_stamp", [row(0, 0, reward=1.0, _ng_environment_server="", ng_perf=perf(5)), row(0, 1, reward=0.0, ng_perf=perf(7))]),
        Case("numeric_agent", [row(0, 0, reward=1.0, agent=5), row(0, 1, reward=0.0, agent=5)]),
        Case(
            "mixed_server_types",
            [row(0, 0, reward=1.0, agent=5), row(0, 0, reward=0.0, agent="a")],
            description="a number and a string as servers: the oracle's sort raises (whole file lost)",
        ),
    ]
    big = [
        row(t, r, reward=rng.random(), tokens=rng.randint(0, 10**6), ng_perf=perf(rng.uniform(1, 1e5))) for t in range(6) for r in range(24)
    ]
    rng.shuffle(big)
    cases.append(
        Case(
            "long_tasks",
            [row(t, r, reward=rng.random(), tokens=rng.randint(0, 10**9), flag=rng.random() < 0.3) for t in range(2) for r in range(300)],
            description="300 repeats per task: pairwise sums past numpy's 128-value blocks",
        )
    )
    cases.append(Case("big_group", big, description="144 rows in one group, 24 per task, shuffled: pandas' pairwise sums", golden=True))
    return cases


# ---------------------------------------------------------------- random small groups


def _value(rng: random.Random) -> Any:
    kind = rng.choices(("float", "int", "bool", "big", "tiny", "none", "str", "neg"), (6, 3, 3, 0.4, 1, 1, 1, 2))[0]
    return {
        "float": lambda: rng.choice((0.0, 1.0, 0.5, round(rng.random(), rng.randint(1, 17)))),
        "int": lambda: rng.randint(-5, 1000),
        "bool": lambda: rng.random() < 0.5,
        "big": lambda: rng.choice((1e15, 2**53 + 1, 1e300, 9.5e18, 2**62)),
        "tiny": lambda: rng.choice((5e-324, 1e-300, -0.0)),
        "none": lambda: None,
        "str": lambda: "x",
        "neg": lambda: -rng.random() * 10 ** rng.randint(0, 6),
    }[kind]()


def fuzz_cases(count: int, seed: int) -> list[Case]:
    """Random small groups: unique keys mostly (a duplicate or an absent index now and then),
    random field sets and value types, some usage, ng_perf and server stamps, a fifth masked."""
    rng = random.Random(seed)
    cases = []
    for n in range(count):
        fields = rng.sample(("reward", "resolved", "score", "steps", "judge", "cost"), rng.randint(0, 4))
        grid_keys = [(t, r) for t in range(rng.randint(1, 5)) for r in range(rng.choice((1, 2, 4, 6)))]
        keys = rng.sample(grid_keys, rng.randint(1, len(grid_keys)))
        if rng.random() < 0.1:
            keys.append(rng.choice(keys))
        rows = []
        for key in keys:
            task, rollout = rng.choice(((None, key[1]), (key[0], None))) if rng.random() < 0.05 else key
            extra = {f: _value(rng) for f in fields if rng.random() < 0.85}
            if rng.random() < 0.3:
                extra["response"] = usage(rng.randint(0, 50), rng.randint(0, 50))
            if rng.random() < 0.5:
                extra["ng_perf"] = perf(rng.choice((rng.uniform(1, 100), rng.randint(1, 100), None)), num_turns=rng.randint(0, 4))
            server = rng.choice((None, None, "env_x", "env_y"))
            if server:
                extra["_ng_environment_server"] = server
            rows.append(row(task, rollout, agent=rng.choice(("a1", "a2")), **extra))
        masked = frozenset(i for i in range(len(rows)) if rng.random() < 0.2)
        cases.append(Case(f"fuzz_{seed}_{n:04d}", rows, masked))
    return cases


# ---------------------------------------------------------------- generated jobs


JOBS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("job_default", {"rollouts": 48}),
    ("job_single", {"rollouts": 30, "repeats": 1}),
    (
        "job_repeats8_servers",
        {"rollouts": 96, "repeats": 8, "servers": 3, "reward_kinds": ("float", "int", "bool", "missing"), "mask_fraction": 0.15},
    ),
    ("job_bool_rewards", {"rollouts": 60, "repeats": 3, "servers": 2, "reward_kinds": ("bool",)}),
    ("job_hostile", {"rollouts": 48, "mode": "hostile"}),
    ("job_large", {"rollouts": 640, "repeats": 16, "servers": 2, "reward_kinds": ("float", "int")}),
)


def enriched_rows(name: str, options: dict[str, Any], workdir: Path, venv: Path, seed: int) -> list[dict[str, Any]]:
    """A generated job through 0.7.0's collection (``ref_collect.py``): rows with ng_perf."""
    job = workdir / name
    info = generate_job(job, calls_per_rollout=3, history_bytes=200, seed=seed, **options)
    objects = job / "objects.jsonl"  # ref_collect stops at a line that is not JSON (hostile jobs have some)
    objects.write_bytes(b"".join(line + b"\n" for line in info.rollouts.read_bytes().splitlines() if _is_object(line)))
    out = job / "enriched.jsonl"
    subprocess.run(
        [str(venv / "bin" / "python"), str(ORACLE_DIR / "ref_collect.py"), str(objects), str(info.capture_dir), str(out)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    rows = []
    for line in out.read_bytes().splitlines():
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict) and "_ref_collect_error" not in value:
            rows.append(value)
    return rows


def _is_object(line: bytes) -> bool:
    try:
        return isinstance(orjson.loads(line), dict)
    except orjson.JSONDecodeError:
        return False


def mask_variants(name: str, rows: list[dict[str, Any]], rng: random.Random) -> list[Case]:
    def group(r: dict[str, Any]) -> Any:
        stamp = r.get("_ng_environment_server")
        return stamp if isinstance(stamp, str) else (r.get("agent_ref") or {}).get("name")

    first_task: dict[Any, Any] = {}
    for r in rows:
        first_task.setdefault(group(r), r.get(T, 0))
    first_group = min(g for g in first_task if isinstance(g, str))
    return [
        Case(f"{name}", rows),
        Case(f"{name}_mask_quarter", rows, frozenset(i for i in range(len(rows)) if rng.random() < 0.25)),
        Case(f"{name}_mask_task", rows, frozenset(i for i, r in enumerate(rows) if r.get(T, 0) == first_task[group(r)])),
        Case(f"{name}_mask_group", rows, frozenset(i for i, r in enumerate(rows) if group(r) == first_group)),
        Case(f"{name}_mask_all", rows, frozenset(range(len(rows)))),
    ]


def job_cases(workdir: Path, venv: Path, quick: bool, seed: int) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for name, options in JOBS[:2] if quick else JOBS:
        cases += mask_variants(name, enriched_rows(name, options, workdir, venv, seed), rng)
    return cases


# ---------------------------------------------------------------- main


def _unordered(refusal: str) -> str:
    """0.7.0 names the two types of an unorderable comparison in set order, which for None
    follows its address on Python 3.11: not reproducible, even by 0.7.0 itself."""
    head, sep, tail = refusal.partition("'<' not supported between instances of ")
    return head + sep + " and ".join(sorted(tail.split(" and "))) if sep else refusal


def compare(cases: list[Case], expected: dict[str, Outcome]) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "cases": len(cases),
        "rows": 0,
        "groups": 0,
        "refused_groups": 0,
        "identical": 0,
        "differing": 0,
        "by_source": {},
        "oracle_crashes": [],
    }
    for case in cases:
        want, got = expected[case.name], ours(case)
        source = summary["by_source"].setdefault(
            case.name.split("_")[0] if case.name.startswith(("fuzz_", "job_")) else "hand", {"cases": 0, "rows": 0, "groups": 0}
        )
        source["cases"] += 1
        source["rows"] += len(case.rows)
        summary["rows"] += len(case.rows)
        if want.crash:
            summary["oracle_crashes"].append({"case": case.name, "oracle": want.crash, "ours_refusals": got.refusals})
            continue
        groups = len(orjson.loads(want.data)) + len(want.refusals)
        source["groups"] += groups
        summary["groups"] += groups
        summary["refused_groups"] += len(want.refusals)
        if want.data == got.data and list(map(_unordered, want.refusals)) == list(map(_unordered, got.refusals)):
            summary["identical"] += 1
            continue
        summary["differing"] += 1
        difference = first_difference(orjson.loads(want.data), orjson.loads(got.data)) if want.data != got.data else None
        print(
            json.dumps(
                {
                    "case": case.name,
                    "bytes_equal": want.data == got.data,
                    "first_difference": difference,
                    "oracle_refusals": want.refusals,
                    "our_refusals": got.refusals,
                }
            ),
            flush=True,
        )
    return summary


def write_golden(path: Path, cases: list[Case], workdir: Path, venv: Path) -> None:
    """The golden file of the unit tests: each case's rows and masks, the oracle's bytes and
    refusals with the masks, and without them (``apply_masks=False``)."""
    unmasked = [Case(f"{case.name}__unmasked", case.rows) for case in cases if case.masked]
    expected = oracle(cases + unmasked, workdir, venv)
    entries = []
    for case in cases:
        want = expected[case.name]
        entry = {
            "name": case.name,
            "description": case.description,
            "rows": case.rows,
            "masked": sorted(case.masked),
            "expected": want.data.decode(),
            "expected_refusals": want.refusals,
        }
        if case.masked:
            bare = expected[f"{case.name}__unmasked"]
            entry |= {"expected_unmasked": bare.data.decode(), "expected_unmasked_refusals": bare.refusals}
        entries.append(entry)
    document = {
        "description": "NeMo Gym 0.7.0's _aggregate_metrics.json (shared/oracle/ref_aggregate.py) for each case's rows, "
        "masked positions given mask_sample: true (expected) or, for a case with masks, left as they are (expected_unmasked); "
        "refusals as ref_aggregate prints them; written by tests/bench/aggregate_diff.py --write-golden",
        "cases": entries,
    }
    path.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")


def main() -> int:
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two small jobs instead of six")
    parser.add_argument("--fuzz", type=int, default=300, help="random small cases")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--oracle-venv", type=Path, default=Path(os.environ.get("ORACLE_VENV", DEFAULT_ORACLE_VENV)))
    parser.add_argument("--write-golden", type=Path, help="write the golden cases' inputs and the oracle's bytes there, and stop")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="aggregate-diff-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if args.write_golden:
        cases = [case for case in hand_cases() if case.golden]
        write_golden(args.write_golden, cases, workdir, args.oracle_venv)
        return 0
    cases = hand_cases() + fuzz_cases(args.fuzz, args.seed) + job_cases(workdir, args.oracle_venv, args.quick, args.seed)
    summary = compare(cases, oracle(cases, workdir, args.oracle_venv))
    print(json.dumps(summary | {"workdir": str(workdir)}))
    return 1 if summary["differing"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
