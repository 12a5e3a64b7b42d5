"""The report's accounting and quality-gate sections, as tables (HTML, markdown and artifacts alike)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evidence.report.markdown import table_markdown
from evidence.report.tables import Table, format_value

__all__ = ["accounting_markdown", "accounting_table", "expected_unknown_note", "gate_markdown", "gate_table", "lost_keys_table"]

COUNTS = ("expected", "landed", "failed", "lost", "duplicates", "unexpected")


def accounting_table(accounting: Mapping[str, Any]) -> Table:
    """One row per shard and the total; an unknown debt shows as a dash (``expected`` null)."""

    def row(name: str, counts: Mapping[str, Any]) -> tuple[str, ...]:
        classes = ", ".join(f"{cls} {n}" for cls, n in counts.get("failed_by_class", {}).items())
        return (name, *(format_value(counts.get(key)) for key in COUNTS), classes)

    rows = [row(name, shard) for name, shard in accounting.get("shards", {}).items()]
    rows.append(row("total", accounting))
    return Table(("shard", *COUNTS, "failed by class"), tuple(rows))


def lost_keys_table(accounting: Mapping[str, Any]) -> Table:
    """The lost rollouts accounting.json names (the rest are counted in ``lost_keys_omitted``)."""
    rows = tuple(
        (entry["shard"], format_value(entry["_ng_task_index"]), format_value(entry["_ng_rollout_index"]))
        for entry in accounting.get("lost_keys", [])
    )
    return Table(("shard", "_ng_task_index", "_ng_rollout_index"), rows)


def gate_table(gate: Mapping[str, Any]) -> Table:
    """Each limit with its measured value and whether it held."""
    rows = tuple(
        (
            limit["name"],
            format_value(limit["limit"]),
            format_value(limit["measured"]),
            "pass" if limit["passed"] else f"FAIL: {limit['reason']}",
        )
        for limit in gate.get("limits", [])
    )
    return Table(("limit", "value", "measured", "result"), rows)


def accounting_markdown(accounting: Mapping[str, Any] | None) -> str:
    """The accounting section of the run's artifacts."""
    if accounting is None:
        return "## Run accounting\n\nNo accounting in this run.\n"
    text = "## Run accounting\n\n" + table_markdown(accounting_table(accounting))
    if accounting.get("expected_unknown"):
        text += "\n" + expected_unknown_note(accounting) + "\n"
    lost = lost_keys_table(accounting)
    if lost.rows:
        text += "\n### Lost rollouts\n\n" + table_markdown(lost)
        if accounting.get("lost_keys_omitted"):
            text += f"\n… and {accounting['lost_keys_omitted']} more.\n"
    return text


def expected_unknown_note(accounting: Mapping[str, Any]) -> str:
    """Why ``expected`` is unknown: a subset run owes nothing, a shard without materialized inputs recorded no debt."""
    if accounting.get("scope") == "subset":
        return "A subset run owes nothing: landed and failed count the rows it selected; the job's accounting is its full run's."
    return "Expected unknown (no materialized inputs): " + ", ".join(accounting["expected_unknown"])


def gate_markdown(gate: Mapping[str, Any]) -> str:
    """The quality-gate section of the run's artifacts."""
    verdict = "passed" if gate["passed"] else "FAILED"
    return f"## Quality gate: {verdict}\n\n" + table_markdown(gate_table(gate))
