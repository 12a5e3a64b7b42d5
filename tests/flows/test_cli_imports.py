"""Start-up: the CLI's parsers load without the orchestration stack (issue 14, goal 3).

Importing Prefect alone takes seconds on a busy machine, so ``evidence-stage --help`` stays fast
only while the command modules import what a subcommand needs inside its handler. A fresh
interpreter is the only place where ``sys.modules`` shows what an import really pulled in.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from flows.cli import build_parser
from tests.conftest import REPO

HEAVY = ("prefect", "dask", "distributed", "s3fs")
PROBE = """
import contextlib, io, json, sys
import flows.cli
loaded = {"import flows.cli": sorted(sys.modules)}
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        flows.cli.main(argv)
    loaded[" ".join(["evidence-stage", *argv])] = sorted(sys.modules)
print(json.dumps(loaded))
"""


def _subcommands() -> list[str]:
    parser = build_parser()
    (choices,) = [action.choices for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    return list(choices)


def test_help_and_import_load_no_orchestration_modules() -> None:
    argvs = [["--help"]] + [[name, "--help"] for name in _subcommands()]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argvs)], cwd=REPO, capture_output=True, text=True, timeout=120, check=True
    )
    loaded = json.loads(done.stdout)
    assert len(loaded) == len(argvs) + 1
    heavy = {
        step: sorted({name.split(".")[0] for name in modules if name.split(".")[0] in HEAVY})
        for step, modules in loaded.items()
    }
    assert heavy == {step: [] for step in loaded}
