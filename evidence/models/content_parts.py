"""Content parts inside conversation items, each with 0.7.0's rule for keys (spec: §8.9).

0.7.0 builds its items from two families of types, and the family decides what a dump does with a
part: request-side parts (``input_text``, ``input_image``, ``input_file``, ``output_text``'s
annotations and log-probabilities) are typed dictionaries, so a dump keeps only the known keys
that were given, in the type's field order, adds no defaults and drops unknown keys; reasoning
parts are response models that keep unknown keys after their own fields. Reproducing the family
is what keeps a re-emitted conversation byte-identical to the release's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Required

from pydantic import AfterValidator, BaseModel, ConfigDict
from typing_extensions import TypedDict

__all__ = [
    "InputPart",
    "OutputPart",
    "ReasoningText",
    "SummaryText",
    "ToolOutputPart",
    "ToolResultPart",
]

ImageDetail = Literal["low", "high", "auto", "original"]
FileDetail = Literal["low", "high"]


class InputText(TypedDict, total=False):
    text: Required[str]
    type: Required[Literal["input_text"]]


class InputImage(TypedDict, total=False):
    detail: Required[ImageDetail]
    type: Required[Literal["input_image"]]
    file_id: str | None
    image_url: str | None


class InputFile(TypedDict, total=False):
    type: Required[Literal["input_file"]]
    detail: FileDetail
    file_data: str
    file_id: str | None
    file_url: str
    filename: str


def _one_video_source(part: dict[str, Any]) -> dict[str, Any]:
    """A video part names exactly one non-blank source URL (a string, or an object's ``url``)."""
    sources = [key for key in ("video_url", "video") if key in part]
    if len(sources) != 1:
        raise ValueError("input_video requires exactly one of video_url or video")
    source = part[sources[0]]
    url = source.get("url") if isinstance(source, dict) else source
    if not isinstance(url, str) or not url.strip():
        raise ValueError(f"input_video.{sources[0]} must contain a non-empty URL")
    return part


class InputVideo(TypedDict, total=False):
    type: Required[Literal["input_video"]]
    video_url: str | dict[str, Any]
    video: str | dict[str, Any]


InputPart = InputText | InputImage | InputFile | Annotated[InputVideo, AfterValidator(_one_video_source)]
"""A part of an input message's (or easy message's) list content."""


class ToolImage(TypedDict, total=False):
    type: Required[Literal["input_image"]]
    detail: ImageDetail | None
    file_id: str | None
    image_url: str | None


class ToolFile(TypedDict, total=False):
    type: Required[Literal["input_file"]]
    detail: FileDetail
    file_data: str | None
    file_id: str | None
    file_url: str | None
    filename: str | None


ToolOutputPart = InputText | ToolImage | ToolFile
"""A part of a list-form ``function_call_output.output`` (its own field orders and optionality)."""


class FileCitation(TypedDict):
    file_id: str
    filename: str
    index: int
    type: Literal["file_citation"]


class UrlCitation(TypedDict):
    end_index: int
    start_index: int
    title: str
    type: Literal["url_citation"]
    url: str


class ContainerFileCitation(TypedDict):
    container_id: str
    end_index: int
    file_id: str
    filename: str
    start_index: int
    type: Literal["container_file_citation"]


class FilePath(TypedDict):
    file_id: str
    index: int
    type: Literal["file_path"]


class TopLogprob(TypedDict):
    token: str
    bytes: list[int]
    logprob: float


class Logprob(TypedDict):
    token: str
    bytes: list[int]
    logprob: float
    top_logprobs: list[TopLogprob]


class _Part(BaseModel):
    """NeMo Gym's own part models: unknown keys are dropped, ``type`` defaults."""

    model_config = ConfigDict(extra="ignore")


class OutputText(_Part):
    annotations: list[FileCitation | UrlCitation | ContainerFileCitation | FilePath]
    text: str
    type: Literal["output_text"] = "output_text"
    logprobs: list[Logprob] | None = None


class Refusal(_Part):
    refusal: str
    type: Literal["refusal"] = "refusal"


OutputPart = OutputText | Refusal
"""A part of an output (assistant) message; a part without ``type`` is told apart by its keys."""


class _ResponsePart(BaseModel):
    """Response-side models: unknown keys are kept after the known fields."""

    model_config = ConfigDict(extra="allow")


class SummaryText(_ResponsePart):
    text: str
    type: Literal["summary_text"]


class ReasoningText(_ResponsePart):
    text: str
    type: Literal["reasoning_text"]


class ToolResultText(_ResponsePart):
    text: str
    type: Literal["input_text"]


class ToolResultImage(_ResponsePart):
    detail: ImageDetail
    type: Literal["input_image"]
    file_id: str | None = None
    image_url: str | None = None


class ToolResultFile(_ResponsePart):
    type: Literal["input_file"]
    detail: FileDetail | None = None
    file_data: str | None = None
    file_id: str | None = None
    file_url: str | None = None
    filename: str | None = None


ToolResultPart = ToolResultText | ToolResultImage | ToolResultFile
"""A part of a list-form ``custom_tool_call_output.output`` (response models: defaults, extras kept)."""
