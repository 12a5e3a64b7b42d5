"""Token normalisation across the three wire dialects (spec: collection.md §4.2).

A count is trusted only when the provider sent a non-negative JSON integer: a float, a string
or a bool is "unknown" (null), never coerced, so null always means "not reported" and 0 means
a real zero.
"""

from __future__ import annotations

from typing import Any

__all__ = ["token_fields"]

_NULL_TOKENS: dict[str, Any] = {
    "tokens_in": None,
    "tokens_out": None,
    "tokens_reasoning": None,
    "tokens_total": None,
    "cached_tokens": None,
    "cache_hit": None,
    "cache_creation_tokens": None,
}


def _count(value: Any) -> int | None:
    """``value`` if it is exactly an int (bool excluded) and >= 0, else None."""
    return value if type(value) is int and value >= 0 else None


def _first_count(container: dict[str, Any], *keys: str) -> int | None:
    """The first valid count among ``keys`` of ``container``."""
    for key in keys:
        value = _count(container.get(key))
        if value is not None:
            return value
    return None


def _first_in_groups(usage: dict[str, Any], groups: tuple[str, ...], keys: tuple[str, ...]) -> int | None:
    """The first valid count among ``keys`` inside the object-valued detail ``groups``."""
    for group in groups:
        details = usage.get(group)
        if isinstance(details, dict):
            value = _first_count(details, *keys)
            if value is not None:
                return value
    return None


def _tokens_in(usage: dict[str, Any]) -> tuple[int | None, int | None]:
    """Prompt tokens with Anthropic cache reads/creations folded in, and the creation count."""
    tokens_in = _first_count(usage, "input_tokens", "prompt_tokens")
    read = _count(usage.get("cache_read_input_tokens"))
    creation = _count(usage.get("cache_creation_input_tokens"))
    if read is not None or creation is not None:
        cache_total = (read or 0) + (creation or 0)
        if tokens_in is not None or cache_total > 0:
            tokens_in = (tokens_in or 0) + cache_total
    return tokens_in, creation


def token_fields(response: dict[str, Any]) -> dict[str, Any]:
    """The record's token and cache fields from ``response.usage`` (all null without usage)."""
    usage = response.get("usage")
    if not isinstance(usage, dict):
        return dict(_NULL_TOKENS)
    tokens_in, creation = _tokens_in(usage)
    tokens_out = _first_count(usage, "output_tokens", "completion_tokens")
    tokens_total = _count(usage.get("total_tokens"))
    if tokens_total is None and tokens_in is not None and tokens_out is not None:
        tokens_total = tokens_in + tokens_out
    reasoning = _first_in_groups(usage, ("output_tokens_details", "completion_tokens_details"), ("reasoning_tokens",))
    if reasoning is None:
        reasoning = _count(usage.get("reasoning_output_tokens"))
    cached = _first_in_groups(usage, ("prompt_tokens_details", "input_tokens_details"), ("cached_tokens", "cached_input_tokens"))
    if cached is None:
        cached = _first_count(usage, "cache_read_input_tokens", "cached_input_tokens")
    return {
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "tokens_reasoning": reasoning,
        "tokens_total": tokens_total,
        "cached_tokens": cached,
        "cache_hit": None if cached is None else cached > 0,
        "cache_creation_tokens": creation,
    }
