"""Optional values as the form shows them: one plain field (blank or absent: the default), not a
"string or null" choice; the schema names the one type, validation still accepts None. And a field
one model lends another (``field_of``), so a parameter two forms share is declared once."""

from __future__ import annotations

import copy
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, WithJsonSchema


def blank_is_none(value: Any) -> Any:
    """A blank form field is the parameter left out."""
    return None if value == "" else value


OptionalText = Annotated[str | None, BeforeValidator(blank_is_none), WithJsonSchema({"type": "string"})]
OptionalCount = Annotated[int | None, BeforeValidator(blank_is_none), WithJsonSchema({"type": "integer", "minimum": 1})]
OptionalShare = Annotated[float | None, BeforeValidator(blank_is_none), WithJsonSchema({"type": "number", "minimum": 0, "maximum": 1})]


def field_of(model: type[BaseModel], name: str) -> Any:
    """Another model's field (title, description, bounds, option), so two forms and two commands read the same."""
    return copy.copy(model.model_fields[name])
