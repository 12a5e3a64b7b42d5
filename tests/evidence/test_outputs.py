"""evidence/outputs.py is the one table of a run's outputs: the README's table is its, and each output is said once.

Regenerate the README's table after a change (from the repository root):
``.venv/bin/python -m tests.evidence.test_outputs``.
"""

from __future__ import annotations

import re

from evidence import MLFLOW_ARTIFACTS, REPORT_LINKS, RUN_OUTPUTS, outputs_markdown
from tests.conftest import REPO

README = REPO / "README.md"
TABLE = re.compile(r"(<!-- outputs:start -->\n).*?(<!-- outputs:end -->)", re.DOTALL)


def _with_table(text: str) -> str:
    return TABLE.sub(lambda match: match.group(1) + outputs_markdown() + match.group(2), text)


def test_the_readme_table_is_the_registry() -> None:
    text = README.read_text(encoding="utf-8")
    assert TABLE.search(text), "README.md lost its <!-- outputs:start --> ... <!-- outputs:end --> markers"
    assert _with_table(text) == text, "README.md's output table is stale: run python -m tests.evidence.test_outputs"


def test_each_output_is_said_once_and_the_report_links_exactly_the_linked_ones() -> None:
    names = [output.name for output in RUN_OUTPUTS]
    assert len(names) == len(set(names))
    assert sorted(o.name for o in REPORT_LINKS) == sorted(o.name for o in RUN_OUTPUTS if o.link is not None)
    assert len(REPORT_LINKS) == len(set(REPORT_LINKS))
    assert all(not o.name.endswith("/") for o in RUN_OUTPUTS if o.link or o.tables or o in MLFLOW_ARTIFACTS), (
        "a folder cannot be linked, copied or required"
    )


if __name__ == "__main__":
    README.write_text(_with_table(README.read_text(encoding="utf-8")), encoding="utf-8")
