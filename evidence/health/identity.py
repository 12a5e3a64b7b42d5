"""A rollout's identity as 0.7.0's health digest types it.

0.7.0 builds the identity from raw record values and then lets its digest model coerce them to
int-or-string; a value the model refuses crashes the whole 0.7.0 run. Here the refusal is an
``InvalidIdentity`` for that one row, which the caller turns into a ``record_unreadable`` finding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The drop-in and the stage both health-check exactly one rollouts file, so every line belongs
# to input 0 of 0.7.0's path list.
SOURCE_INDEX = 0

TASK_KEY = "_ng_task_index"
ROLLOUT_KEY = "_ng_rollout_index"
ROLLOUT_ID_KEY = "_ng_rollout_id"
STAGE_KEY = "stage_index"
_FLOAT_INT_LIMIT = 2.0**63


class InvalidIdentity(ValueError):
    """An identity value that 0.7.0's digest model cannot type; ``field`` names the key."""

    def __init__(self, field: str) -> None:
        super().__init__(f"{field} must be an int or a string")
        self.field = field


@dataclass(frozen=True, slots=True)
class Identity:
    """Coerced task/rollout/stage plus the rollout id string."""

    task: int | str
    rollout: int | str
    rollout_id: str
    stage: int | str | None


def unreadable_identity(line: int) -> Identity:
    """The synthetic identity 0.7.0 gives a line that is not a JSON object."""
    task = f"__unreadable_record__:input-{SOURCE_INDEX}:line-{line}"
    return Identity(task, 0, f"{task}-0", None)


def record_identity(record: dict[str, Any], ordinal: int) -> Identity:
    """Identity of a readable record; ``ordinal`` is its 0-based index among non-blank lines.

    Raises:
        InvalidIdentity: a task/rollout index or stage 0.7.0 would crash on.
    """
    task = record.get(TASK_KEY, ordinal)
    rollout = record.get(ROLLOUT_KEY, 0)
    trajectory = record.get("ng_trajectory")
    raw_rollout_id = (
        record.get(ROLLOUT_ID_KEY)
        or (trajectory.get("rollout_id") if isinstance(trajectory, dict) else None)
        or f"{task}-{rollout}"  # raw values: a true task index gives "True-0", as in 0.7.0
    )
    return Identity(
        task=_coerce(task, TASK_KEY),
        rollout=_coerce(rollout, ROLLOUT_KEY),
        rollout_id=str(raw_rollout_id),
        stage=None if record.get(STAGE_KEY) is None else _coerce(record[STAGE_KEY], STAGE_KEY),
    )


def _coerce(value: Any, field: str) -> int | str:
    """Pydantic's lax ``int | str``: bools and integral floats become ints, strings stay.

    Pydantic refuses floats outside the open 64-bit range, such as the ``1e+20`` orjson makes of
    a wide integer literal.
    """
    if isinstance(value, (int, str)):
        return int(value) if isinstance(value, bool) else value
    if isinstance(value, float) and value.is_integer() and abs(value) < _FLOAT_INT_LIMIT:
        return int(value)
    raise InvalidIdentity(field)
