"""Ignore-list normalisation and the check registry."""

from __future__ import annotations

import pickle

import pytest

from evidence.errors import EvidenceError
from evidence.health import CHECK_IDS, CHECKS, UnknownHealthCheck, normalize_ignored_checks
from evidence.health.registry import BOUND_CALLS, OWNED_MODEL_CALLS, CheckSpec


def test_string_is_comma_split_stripped_and_deduplicated() -> None:
    assert normalize_ignored_checks(" agent_turn_hollow ,,model_call_failed,agent_turn_hollow") == (
        "agent_turn_hollow",
        "model_call_failed",
    )


def test_sequence_keeps_first_occurrence_order() -> None:
    ids = ["record_unreadable", "", "  agent_turn_hollow ", "record_unreadable"]
    assert normalize_ignored_checks(ids) == ("record_unreadable", "agent_turn_hollow")


def test_none_means_nothing_ignored() -> None:
    assert normalize_ignored_checks(None) == ()


def test_unknown_ids_are_reported_sorted_with_0_7_0_text() -> None:
    with pytest.raises(UnknownHealthCheck) as raised:
        normalize_ignored_checks(["zzz", "agent_turn_hollow", "nope", "zzz"])
    assert str(raised.value) == "Unknown rollout health check(s): nope, zzz"
    assert isinstance(raised.value, EvidenceError)
    assert isinstance(raised.value, ValueError)
    assert str(pickle.loads(pickle.dumps(raised.value))) == str(raised.value)


def test_registry_order_and_scopes() -> None:
    assert CHECK_IDS[:3] == ("check_execution_error", "record_unreadable", "rollout_duplicate_identity")
    assert [CHECKS[c].scope for c in CHECK_IDS].count("rollout") == 12
    assert [c for c in CHECK_IDS if CHECKS[c].scope == "task"] == [
        "task_consistently_unhealthy",
        "task_no_successful_model_calls",
    ]
    with pytest.raises(TypeError):
        CHECKS["x"] = CHECKS["record_unreadable"]  # type: ignore[index]


def test_a_check_cannot_read_both_binding_views() -> None:
    with pytest.raises(ValueError, match="both turn-bound and invocation-owned"):
        CheckSpec("x", "rollout", "rollout", frozenset({BOUND_CALLS, OWNED_MODEL_CALLS}), None)
