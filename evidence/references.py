"""Which captured model call a reference names: the one home of 0.7.0's resolution rules.

A reference names a model call by ``model_call_id``, or by ``(model_ref, response_id)``. 0.7.0
resolves references by more than one rule, and each function here names the 0.7.0 code it
follows, so a reader can tell a deliberate difference from a copy that drifted:

* the *collection rule* (:class:`CallIndex`), shared by the observation join, ``ng_perf``
  ownership (:func:`ng_perf_owners`, which our capability matrix measures too) and the health
  checks' call bindings;
* the *Claude Code rule* (:func:`names_call`): which calls the invocations already reference,
  and which call a compaction's before/after ref points at, when summary calls are looked for;
* the *turn-synthesis rule* (:class:`TurnAttribution`): which invocation a rebuilt turn
  belongs to;
* the *ATIF export rule* (:class:`ExportCallIndex`): one match or a refusal naming the doubt.

Calls and references are described as :class:`CallName` (typed models through
:func:`typed_name`, JSON objects through :func:`json_name`), so the same rule serves the typed
collection and the tolerant readers of enriched rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

from evidence.errors import AtifExportError
from evidence.models.capture import ModelCallRecord, ModelRef
from evidence.models.observations import AgentInvocationRecord, ModelCallRef

__all__ = [
    "CallIndex",
    "CallName",
    "ExportCallIndex",
    "TurnAttribution",
    "json_name",
    "json_ref_name",
    "names_call",
    "ng_perf_owners",
    "record_name",
    "ref_name",
    "typed_name",
]

Owner = TypeVar("Owner")


class CallName(NamedTuple):
    """What a model call, or a reference to one, names a call by.

    ``model_call_id`` is None when absent or empty (an empty id names nothing); ``model_ref`` is
    compared whole (the ``(type, name)`` pair of a model, the value itself of a JSON object);
    ``response_id`` is kept as recorded, because 0.7.0 filters an id match on any response id
    that is not None, ``""`` included. ``pair`` is ``(type, name, response_id)`` when the model_ref
    is set and the response id non-empty: the only other way a call can be found.

    A named tuple: one is made per call and per reference of every row, five times a row, and a
    frozen dataclass's ``__init__`` (an ``object.__setattr__`` per field) cost three times as much.
    """

    model_call_id: str | None
    model_ref: object
    response_id: object
    pair: tuple[str, str, str] | None


def typed_name(model_call_id: str | None, model_ref: ModelRef | None, response_id: str | None) -> CallName:
    """The name of a validated call or ref (capture records, trajectory calls, ``ModelCallRef``)."""
    ref_key = None if model_ref is None else (model_ref.type, model_ref.name)
    pair = (*ref_key, response_id) if ref_key is not None and response_id else None
    return CallName(model_call_id or None, ref_key, response_id, pair)


def record_name(call: ModelCallRecord) -> CallName:
    """The name of a captured call."""
    return typed_name(call.model_call_id, call.model_ref, call.response_id)


def ref_name(ref: ModelCallRef) -> CallName:
    """The name a validated ``ModelCallRef`` gives its call."""
    return typed_name(ref.model_call_id, ref.model_ref, ref.response_id)


def json_name(model_call_id: Any, model_ref: Any, response_id: Any) -> CallName:
    """The name of a call or ref read from JSON as found: a value of the wrong type names nothing."""
    pair = None
    if isinstance(model_ref, dict) and isinstance(response_id, str) and response_id:
        kind, name = model_ref.get("type"), model_ref.get("name")
        if isinstance(kind, str) and isinstance(name, str):
            pair = (kind, name, response_id)
    call_id = model_call_id if isinstance(model_call_id, str) and model_call_id else None
    return CallName(call_id, model_ref, response_id, pair)


def json_ref_name(ref: Mapping[str, Any]) -> CallName:
    """The name a reference object of a row gives its call."""
    return json_name(ref.get("model_call_id"), ref.get("model_ref"), ref.get("response_id"))


class CallIndex:
    """Calls findable by ``model_call_id`` or by ``(type, name, response_id)``: the collection rule.

    0.7.0 resolves this way in ``nemo_gym/rollout_observability.py::join_model_call_observations``
    (``matches``), ``nemo_gym/rollout_collection.py::_build_ng_perf`` (``_match_call_index``) and
    ``nemo_gym/health/checks.py::_bind_policy_call_views``. Nothing is guessed from order or time.
    """

    def __init__(self, calls: Sequence[CallName]) -> None:
        self._calls = calls
        self._by_id: dict[str, list[int]] = {}
        self._by_pair: dict[tuple[str, str, str], list[int]] = {}
        for position, call in enumerate(calls):
            if call.model_call_id is not None:
                self._by_id.setdefault(call.model_call_id, []).append(position)
            if call.pair is not None:
                self._by_pair.setdefault(call.pair, []).append(position)

    def candidates(self, ref: CallName) -> list[int]:
        """Positions of the calls ``ref`` may name; exactly one is a match.

        A ref with an id: the calls with that id, less those whose model_ref or response_id
        differs from the ref's where the ref has one. A ref without: the calls with its pair.
        """
        if ref.model_call_id is not None:
            return [
                position
                for position in self._by_id.get(ref.model_call_id, [])
                if (ref.model_ref is None or self._calls[position].model_ref == ref.model_ref)
                and (ref.response_id is None or self._calls[position].response_id == ref.response_id)
            ]
        if ref.pair is None:
            return []
        return list(self._by_pair.get(ref.pair, []))


def ng_perf_owners(index: CallIndex, invocations: Iterable[tuple[Owner, Iterable[CallName]]]) -> dict[int, Owner]:
    """Call position -> the invocation that owns it, by ``ng_perf``'s ownership rule.

    0.7.0 ``nemo_gym/rollout_collection.py::_build_ng_perf``: invocations in order, refs in
    order; a ref matching exactly one call that no earlier ref claimed gives that call to its
    invocation. A ref matching several calls, or a call already claimed, adds nothing, so token
    sums never count a call twice. Turn refs confer nothing (the caller passes invocation refs).
    """
    owners: dict[int, Owner] = {}
    for owner, refs in invocations:
        for ref in refs:
            candidates = index.candidates(ref)
            if len(candidates) == 1 and candidates[0] not in owners:
                owners[candidates[0]] = owner
    return owners


def names_call(ref: CallName, call: CallName) -> bool:
    """Whether ``ref`` names ``call`` by the Claude Code association rule.

    0.7.0 ``responses_api_agents/claude_code_agent/observability.py::
    associate_claude_code_compaction_calls`` (``ref_matches_call``): a ref with an id names the
    call with that id whatever its model_ref and response_id; a ref without one names the calls
    with an equal model_ref and response_id. Looser than the collection rule, on purpose: it
    only decides which calls are already taken and where a compaction sits.
    """
    if ref.model_call_id is not None:
        return ref.model_call_id == call.model_call_id
    return ref.model_ref == call.model_ref and ref.response_id == call.response_id


def _blank(value: Any) -> bool:
    return isinstance(value, str) and not value.strip()


class TurnAttribution:
    """Which invocation a call's rebuilt turn belongs to: the turn-synthesis rule.

    0.7.0 ``nemo_gym/rollout_collection.py::_turns_from_model_calls``: every ref of every
    invocation counts, whatever the join made of it, and the last invocation naming a value
    wins; a call is found by its id, else by its response id alone (model_ref is not compared).
    "Else" is Python's ``or``: a call found by id in an invocation whose id is ``""`` is looked
    up by its response id as well, and goes to that invocation if there is one.
    """

    def __init__(self, invocations: Iterable[AgentInvocationRecord]) -> None:
        self._by_id: dict[str, str] = {}
        self._by_response_id: dict[str, str] = {}
        for invocation in invocations:
            for ref in invocation.model_calls:
                if ref.model_call_id:
                    self._by_id[ref.model_call_id] = invocation.invocation_id
                if ref.response_id:
                    self._by_response_id[ref.response_id] = invocation.invocation_id

    def invocation_of(self, model_call_id: str | None, response_id: str | None) -> str | None:
        """The invocation a call with these ids belongs to, or None (the call makes no turn)."""
        return self._by_id.get(model_call_id or "") or self._by_response_id.get(response_id or "")


class ExportCallIndex:
    """The captured calls of a trajectory being exported to ATIF: the strict export rule.

    0.7.0 ``nemo_gym/atif_export.py::_model_call_index`` and ``_resolve_model_call``. Unlike the
    collection rule, an id match is not narrowed by the ref's model_ref/response_id: a
    disagreement is a refusal, as is a blank (whitespace) identifier on either side, because an
    export must never publish a turn joined to the wrong call.
    """

    def __init__(self, calls: list[dict[str, Any]]) -> None:
        self.calls = calls
        self.by_id: dict[str, list[int]] = defaultdict(list)
        # looked up with a ref's response id, which may be absent
        self.by_pair: dict[tuple[str, str, str | None], list[int]] = defaultdict(list)
        for index, call in enumerate(calls):
            call_id = call.get("model_call_id")
            if isinstance(call_id, str) and call_id.strip():
                self.by_id[call_id].append(index)
            meta = call.get("response_metadata", {})
            ref, response_id = meta.get("model_ref"), meta.get("response_id")
            if ref is not None and isinstance(response_id, str) and response_id.strip():
                self.by_pair[(ref["type"], ref["name"], response_id)].append(index)

    def resolve(self, ref: dict[str, Any], path: str) -> int:
        """The capture index a reference names, after 0.7.0's blank, ambiguity and conflict checks."""
        call_id, response_id = ref.get("model_call_id"), ref.get("response_id")
        if _blank(call_id):
            raise AtifExportError(f"{path}.model_call_id: cannot be blank")
        if _blank(response_id):
            raise AtifExportError(f"{path}.response_id: cannot be blank")
        if call_id is not None:
            matches = self.by_id.get(call_id, [])
            if not matches:
                raise AtifExportError(f"{path}: unknown model_call_id {call_id!r}")
            if len(matches) > 1:
                raise AtifExportError(f"{path}: model_call_id matches more than one captured model call")
        else:
            model_ref = ref["model_ref"]
            matches = self.by_pair.get((model_ref["type"], model_ref["name"], response_id), [])
            if not matches:
                raise AtifExportError(f"{path}: model_ref and response_id do not match a captured model call")
            if len(matches) > 1:
                raise AtifExportError(f"{path}: model_ref and response_id match more than one captured model call")
        index = matches[0]
        self._check_resolved(index, ref, path)
        return index

    def _check_resolved(self, index: int, ref: dict[str, Any], path: str) -> None:
        call = self.calls[index]
        meta = call.get("response_metadata", {})
        if _blank(call.get("model_call_id")):
            raise AtifExportError(f"ng_trajectory.model_calls[{index}].model_call_id: cannot be blank")
        if _blank(meta.get("response_id")):
            raise AtifExportError(f"ng_trajectory.model_calls[{index}].response_metadata.response_id: cannot be blank")
        if ref.get("response_id") is not None and ref["response_id"] != meta.get("response_id"):
            raise AtifExportError(f"{path}: response_id conflicts with the captured model call")
        ref_model, call_model = ref.get("model_ref"), meta.get("model_ref")
        if ref_model is not None and (
            call_model is None or (ref_model["type"], ref_model["name"]) != (call_model["type"], call_model["name"])
        ):
            raise AtifExportError(f"{path}: model_ref conflicts with the captured model call")
