"""A job's rollouts files (its shards) and the sidecars Gym writes beside each one.

Large evaluations run as several ``gym eval run`` invocations, one rollouts JSONL each, with a
``<stem>_failures.jsonl`` and a ``<stem>_materialized_inputs.jsonl`` beside it. The stage
treats them as one job, named the way ``gym eval aggregate`` names its ``input_glob``: paths,
globs or comma-separated globs; matches sorted per pattern and deduplicated; files whose stem
ends with a sidecar suffix left out, because a shard's sidecars match its own glob.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tasks.inputs.naming import FAILURES_SUFFIX, MATERIALIZED_SUFFIX, sidecar_url
from tasks.storage import InputNotFound, Location
from tasks.storage.concurrent import at_once

_GLOB_CHARS = frozenset("*?[")
SIDECAR_SUFFIXES = (FAILURES_SUFFIX, MATERIALIZED_SUFFIX)


@dataclass(frozen=True)
class Shard:
    """One rollouts file and the sidecars that exist beside it (None when absent)."""

    main: Location
    failures: Location | None = None
    materialized: Location | None = None

    @property
    def name(self) -> str:
        return self.main.name


def is_sidecar(name: str) -> bool:
    """Whether a file name is a shard's sidecar (its stem ends with ``_failures`` or ``_materialized_inputs``)."""
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name.rsplit(".", 1)[0]
    return stem.endswith(SIDECAR_SUFFIXES)


def expand_rollouts(rollouts: str | Sequence[str], options: dict[str, Any]) -> list[str]:
    """The rollouts file URLs a ``rollouts`` parameter names, in shard order.

    Each entry is a path, a glob, or comma-separated paths or globs (split on commas as Gym
    splits ``input_glob``, so a file name with a comma cannot be named). A path without glob characters is
    kept as given (a missing one is reported by ``check_inputs``); a glob that matches no
    rollouts file is an error, since a job silently missing a shard would under-report.

    Raises:
        InputNotFound: a glob matched no rollouts file.
    """
    seen: dict[str, None] = {}
    for entry in [rollouts] if isinstance(rollouts, str) else rollouts:
        for pattern in (p.strip() for p in entry.split(",") if p.strip()):
            if not _GLOB_CHARS & set(pattern):
                seen.setdefault(pattern, None)
                continue
            matched = [loc.url for loc in Location(pattern, options).glob() if not is_sidecar(loc.name)]
            if not matched:
                raise InputNotFound(pattern, "no rollouts file matches")
            for url in matched:
                seen.setdefault(url, None)
    return list(seen)


def find_shards(urls: Sequence[str], options: dict[str, Any], failures: str | None = None) -> tuple[Shard, ...]:
    """Each rollouts file with the sidecars present beside it by stem.

    ``failures`` (one-file jobs only) names the failures sidecar explicitly; it is used even
    when it does not exist yet, so the run reports it missing instead of guessing.

    Raises:
        ValueError: two shards share a file name (the manifest and accounting name shards by it),
            or an explicit failures sidecar was given for several shards.
    """
    if failures is not None and len(urls) > 1:
        raise ValueError("--failures names one sidecar; a sharded job finds each shard's beside it")
    names = [Location(url).name for url in urls]
    if len(set(names)) != len(names):
        raise ValueError(f"shards must have distinct file names: {', '.join(sorted(n for n in set(names) if names.count(n) > 1))}")
    explicit = Location(failures, options) if failures is not None else None
    suffixes = (MATERIALIZED_SUFFIX,) if explicit is not None else (FAILURES_SUFFIX, MATERIALIZED_SUFFIX)
    sidecars = [Location(sidecar_url(url, suffix), options) for url in urls for suffix in suffixes]
    present = at_once([sidecar.is_file for sidecar in sidecars], remote=is_remote(sidecars))
    found = iter([sidecar if ok else None for sidecar, ok in zip(sidecars, present, strict=True)])
    shards = []
    for url in urls:
        beside = next(found) if explicit is None else explicit
        shards.append(Shard(Location(url, options), beside, next(found)))
    return tuple(shards)


def is_remote(locations: Sequence[Location]) -> bool:
    """Whether any of ``locations`` is on a remote store (its checks are worth making at once)."""
    return any(not location.is_local for location in locations)
