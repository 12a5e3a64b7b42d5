"""The computer-use items 0.7.0 takes from the OpenAI SDK: ``computer_call`` and its output (spec: §8.9).

A call carries one action (or several) from the SDK's action union; its output carries a
screenshot. Like every SDK item model, unknown keys are kept.
"""

from __future__ import annotations

from typing import Literal

from evidence.models.sdk_item import SdkModel as _SdkModel
from evidence.models.sdk_item import Status

__all__ = ["ComputerCall", "ComputerCallOutput"]


class SafetyCheck(_SdkModel):
    id: str
    code: str | None = None
    message: str | None = None


class Click(_SdkModel):
    button: Literal["left", "right", "wheel", "back", "forward"]
    type: Literal["click"]
    x: int
    y: int
    keys: list[str] | None = None


class DoubleClick(_SdkModel):
    keys: list[str] | None = None
    type: Literal["double_click"]
    x: int
    y: int


class Point(_SdkModel):
    x: int
    y: int


class Drag(_SdkModel):
    path: list[Point]
    type: Literal["drag"]
    keys: list[str] | None = None


class Keypress(_SdkModel):
    keys: list[str]
    type: Literal["keypress"]


class Move(_SdkModel):
    type: Literal["move"]
    x: int
    y: int
    keys: list[str] | None = None


class Screenshot(_SdkModel):
    type: Literal["screenshot"]


class Scroll(_SdkModel):
    scroll_x: int
    scroll_y: int
    type: Literal["scroll"]
    x: int
    y: int
    keys: list[str] | None = None


class TypeText(_SdkModel):
    text: str
    type: Literal["type"]


class Wait(_SdkModel):
    type: Literal["wait"]


ComputerAction = Click | DoubleClick | Drag | Keypress | Move | Screenshot | Scroll | TypeText | Wait


class ComputerCall(_SdkModel):
    id: str
    call_id: str
    pending_safety_checks: list[SafetyCheck]
    status: Status
    type: Literal["computer_call"]
    action: ComputerAction | None = None
    actions: list[ComputerAction] | None = None


class ComputerScreenshot(_SdkModel):
    type: Literal["computer_screenshot"]
    file_id: str | None = None
    image_url: str | None = None


class ComputerCallOutput(_SdkModel):
    call_id: str
    output: ComputerScreenshot
    type: Literal["computer_call_output"]
    id: str | None = None
    acknowledged_safety_checks: list[SafetyCheck] | None = None
    status: Status | None = None
