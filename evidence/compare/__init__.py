"""Comparing two runs: what changed between evaluation jobs, and whether to trust it.

Pure: the caller reads each run directory into a :class:`RunEvidence` (documents as dicts,
rows reduced to :class:`RolloutFacts`), :func:`compare_runs` returns a typed
:class:`Comparison`, and the renderers turn it into ``compare.json``, ``compare.md`` and
``compare.html``.
"""

from evidence.compare.build import NO_CHANGE, compare_runs, comparison_json
from evidence.compare.facts import METRICS, RolloutFacts, VerdictFacts, rollout_facts, verdict_facts
from evidence.compare.model import Comparison
from evidence.compare.render import compare_markdown, render_compare
from evidence.compare.run import RunEvidence

__all__ = [
    "METRICS",
    "NO_CHANGE",
    "Comparison",
    "RolloutFacts",
    "RunEvidence",
    "VerdictFacts",
    "compare_markdown",
    "compare_runs",
    "comparison_json",
    "render_compare",
    "rollout_facts",
    "verdict_facts",
]
