"""Record, by hand, NeMo Gym 0.7.0's ATIF documents for agent steps with mixed and missing metrics.

Usage (from the repository root; the oracle interpreter from ../shared/oracle/setup.sh):

    .venv/bin/python tests/bench/atif_metrics_golden.py [--oracle-venv DIR] [tests/data/atif_metrics_0_7_0.json]

Each case is the three-turn row of the ATIF golden case 14 (three model calls, one agent step
each) with its calls' ``token_stats`` replaced: some calls with counts, some with none (``{}``),
some without the key at all. The oracle's per-row converter (``ref_atif_rows.py``, session id
``s``, agent version ``1``) writes each document; the file holds the rows and those documents
for ``tests/evidence/atif/test_metrics.py``, which never runs the oracle.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.conformance.conftest import load_cases  # noqa: E402

ORACLE_DIR = REPO.parent / "shared" / "oracle"
DEFAULT_ORACLE_VENV = REPO.parent / ".venv-gym"
DEFAULT_OUT = REPO / "tests" / "data" / "atif_metrics_0_7_0.json"
ABSENT = None  # the call has no token_stats key at all

FULL = (
    {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    {"prompt_tokens": 20, "completion_tokens": 4, "total_tokens": 24},
)
CASES: tuple[tuple[str, str, tuple[dict[str, Any] | None, ...]], ...] = (
    ("middle_step_without_token_stats", "steps 1 and 3 counted, step 2's call has no token_stats", (FULL[0], ABSENT, FULL[1])),
    ("middle_step_empty_token_stats", "steps 1 and 3 counted, step 2's token_stats empty", (FULL[0], {}, FULL[1])),
    ("no_step_has_metrics", "no call has a count: no step metrics, no totals (not zeros)", ({}, ABSENT, {})),
    ("first_step_only", "only step 1 counted, cached included", ({"prompt_tokens": 7, "completion_tokens": 3, "cached_tokens": 2}, {}, {})),
    ("last_step_extras_only", "only step 3 has counts, and only the extras", ({}, {}, {"reasoning_tokens": 1, "total_tokens": 5})),
    (
        "every_step_cached_on_some",
        "every step counted, cached_tokens on steps 1 and 3 only: prompt and completion totals, no cached total",
        (
            {"prompt_tokens": 10, "completion_tokens": 2, "cached_tokens": 3},
            {"prompt_tokens": 20, "completion_tokens": 4},
            {"prompt_tokens": 30, "completion_tokens": 6, "cached_tokens": 1},
        ),
    ),
    (
        "every_step_prompt_only_on_one",
        "every step counted, step 2 without completion_tokens: a prompt total only",
        (
            {"prompt_tokens": 10, "completion_tokens": 2},
            {"prompt_tokens": 20},
            {"prompt_tokens": 30, "completion_tokens": 6},
        ),
    ),
)


def rows() -> list[dict[str, Any]]:
    base = json.loads(dict(load_cases("atif"))["14_three_turns_cumulative_steps_and_timestamps"]["rollouts_jsonl"])
    made = []
    for task, (_, _, stats) in enumerate(CASES):
        row = copy.deepcopy(base)
        row["_ng_task_index"] = task
        for call, counts in zip(row["ng_trajectory"]["model_calls"], stats, strict=True):
            if counts is ABSENT:
                call.pop("token_stats", None)
            else:
                call["token_stats"] = counts
        made.append(row)
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?", default=DEFAULT_OUT)
    parser.add_argument("--oracle-venv", type=Path, default=Path(os.environ.get("ORACLE_VENV", DEFAULT_ORACLE_VENV)))
    args = parser.parse_args()
    inputs = rows()
    with tempfile.TemporaryDirectory(prefix="atif-metrics-") as work:
        src, dst = Path(work) / "rows.jsonl", Path(work) / "out.jsonl"
        src.write_text("".join(json.dumps(row) + "\n" for row in inputs), encoding="utf-8")
        command = [str(args.oracle_venv / "bin" / "python"), str(ORACLE_DIR / "ref_atif_rows.py"), str(src), str(dst)]
        subprocess.run([*command, "--session-id", "s", "--agent-version", "1"], check=True, stdout=subprocess.DEVNULL)
        results = [json.loads(line) for line in dst.read_text(encoding="utf-8").splitlines()]
    cases = []
    for (name, description, _), row, result in zip(CASES, inputs, results, strict=True):
        if not result["ok"]:
            raise SystemExit(f"{name}: 0.7.0 refused the row: {result['error']}")
        cases.append({"name": name, "description": description, "row": row, "expected": result["atif"]})
    document = {
        "description": "NeMo Gym 0.7.0's ATIF document (shared/oracle/ref_atif_rows.py, session id 's', agent version '1', "
        "model_dump(mode='json', exclude_none=True)) for rows whose agent steps mix present and missing metrics; "
        "written by tests/bench/atif_metrics_golden.py",
        "cases": cases,
    }
    args.out.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
