"""The rollout viewer: ``viewer/index.html`` and its detail files, from a run's outputs (pure rendering).

From every verdict to its evidence: a table of every main attempt (filter by verdict, agent,
check, gap, status and ATIF outcome; sort by reward, latency, tokens, turns) and a page per
rollout (identity and status; the verdict with each finding pointing at its turn, model call or
tool call; the turns with their calls; gaps with their meaning; its row's line, ATIF file or
refusal and capture file). Each main row's ``view_facts`` are made where the row is decoded
(the attempt engine); the reduce completes them with the run's verdict and ATIF decision
(``rollout_view``), feeds ``ViewerIndex`` (its rows kept in a local spill, ``IndexRows``),
writes each ``Chunk`` it gets, then ``viewer_page``'s page, row by row (``tasks/tables/viewer.py``).
"""

from evidence.viewer.index import CHUNK_BYTES, CHUNK_ROLLOUTS, INDEX_FIELDS, Chunk, IndexRows, ViewerIndex, chunk_name
from evidence.viewer.page import render_viewer, viewer_csp, viewer_page
from evidence.viewer.rollout import RolloutView, ViewFacts, decode_row, rollout_view, view_facts
from evidence.viewer.script import SCRIPT
from evidence.viewer.text import clean, excerpt, script_json

__all__ = [
    "CHUNK_BYTES",
    "CHUNK_ROLLOUTS",
    "INDEX_FIELDS",
    "SCRIPT",
    "Chunk",
    "IndexRows",
    "RolloutView",
    "ViewFacts",
    "ViewerIndex",
    "chunk_name",
    "clean",
    "decode_row",
    "excerpt",
    "render_viewer",
    "rollout_view",
    "script_json",
    "view_facts",
    "viewer_csp",
    "viewer_page",
]
