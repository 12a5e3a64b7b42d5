"""The flows' decorator: Prefect flows whose parameters are pydantic models, recorded by pydantic.

Prefect records a new flow run's parameters as FastAPI's ``jsonable_encoder`` gives them, and
nothing else a CLI run does imports FastAPI (83 ms of the example job's run under ``-X
importtime``, 0.3 s on a slower day). For a pydantic model that encoder returns the model's
``model_dump(mode="json", by_alias=True)``, which pydantic gives alone. Every flow here takes
one parameter model, so this module is their one decorator.

It is named ``flow``, as Prefect's is, because Prefect also reads a flow's options from its
file's source, from a decorator call of that name: a worker or ``prefect deploy`` that cannot
import the file makes a placeholder flow named from it, which must be ``evidence-stage`` too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from prefect.flows import Flow
from pydantic import BaseModel

P = ParamSpec("P")
R = TypeVar("R")


class ModelFlow(Flow[P, R]):
    """A Prefect flow that records its pydantic-model parameters without importing FastAPI."""

    def serialize_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        """The run's parameters as JSON values: models by pydantic, anything else (a dict a
        caller passed, a future) by Prefect's own encoder, so the record is the same either way."""
        others = super().serialize_parameters({name: value for name, value in parameters.items() if not isinstance(value, BaseModel)})
        models = {name: value.model_dump(mode="json", by_alias=True) for name, value in parameters.items() if isinstance(value, BaseModel)}
        return {**others, **models}


def flow(**options: Any) -> Callable[[Callable[P, R]], ModelFlow[P, R]]:
    """``@prefect.flow(**options)``, making a ModelFlow."""

    def decorate(fn: Callable[P, R]) -> ModelFlow[P, R]:
        return ModelFlow(fn=fn, **options)

    return decorate
