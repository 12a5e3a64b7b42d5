"""Conversation items 0.7.0 takes from the OpenAI SDK: hosted and client tool calls (spec: §8.9).

These models come from the response side of the SDK, so a dump keeps unknown keys after the
known fields (at every nesting level) and fills in ``None`` for absent optional fields; the
SDK marks ``type`` required on most of them, and only the MCP items NeMo Gym relaxes (``id`` and
``server_label`` optional, any ``status`` string on ``mcp_call``, raw ``tools`` entries).
Unlike NeMo Gym's own message and function-call models, nothing here has a training variant.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from evidence.models.computer_items import ComputerCall, ComputerCallOutput
from evidence.models.content_parts import ToolResultPart
from evidence.models.sdk_item import SdkModel as _SdkModel
from evidence.models.sdk_item import Status

__all__ = ["RESPONSE_ITEM_MODELS"]


class McpCall(_SdkModel):
    id: str | None = None
    arguments: str
    name: str
    server_label: str | None = None
    type: Literal["mcp_call"] = "mcp_call"
    approval_request_id: str | None = None
    error: str | None = None
    output: str | None = None
    status: str | None = None


class PermissiveItem(_SdkModel):
    """The catch-all ``mcp_list_tools`` model: every field optional."""

    id: str | None = None
    server_label: str | None = None
    tools: list[Any] = []  # noqa: RUF012 - a pydantic field, not a class attribute: each instance gets a copy
    type: Literal["mcp_list_tools"] = "mcp_list_tools"
    error: str | None = None


class McpApprovalRequest(_SdkModel):
    id: str | None = None
    arguments: str
    name: str
    server_label: str | None = None
    type: Literal["mcp_approval_request"] = "mcp_approval_request"


class McpApprovalResponse(_SdkModel):
    approval_request_id: str
    approve: bool
    type: Literal["mcp_approval_response"]
    id: str | None = None
    reason: str | None = None


class CustomToolCall(_SdkModel):
    call_id: str
    input: str
    name: str
    type: Literal["custom_tool_call"]
    id: str | None = None
    namespace: str | None = None


class CustomToolCallOutput(_SdkModel):
    call_id: str
    output: str | list[ToolResultPart]
    type: Literal["custom_tool_call_output"]
    id: str | None = None


class LocalShellCallOutput(_SdkModel):
    id: str
    output: str
    type: Literal["local_shell_call_output"]
    status: Status | None = None


class ImageGenerationCall(_SdkModel):
    id: str
    result: str | None = None
    status: Literal["in_progress", "completed", "generating", "failed"]
    type: Literal["image_generation_call"]


class ApplyPatchCallOutput(_SdkModel):
    id: str
    call_id: str
    status: Literal["completed", "failed"]
    type: Literal["apply_patch_call_output"]
    created_by: str | None = None
    output: str | None = None


class Compaction(_SdkModel):
    id: str
    encrypted_content: str
    type: Literal["compaction"]
    created_by: str | None = None


class CompactionTrigger(_SdkModel):
    type: Literal["compaction_trigger"]


class FileSearchResult(_SdkModel):
    attributes: dict[str, str | float | bool] | None = None
    file_id: str | None = None
    filename: str | None = None
    score: float | None = None
    text: str | None = None


class FileSearchCall(_SdkModel):
    id: str
    queries: list[str]
    status: Literal["in_progress", "searching", "completed", "incomplete", "failed"]
    type: Literal["file_search_call"]
    results: list[FileSearchResult] | None = None


class SearchSource(_SdkModel):
    type: Literal["url"]
    url: str


class SearchAction(_SdkModel):
    type: Literal["search"]
    queries: list[str] | None = None
    query: str | None = None
    sources: list[SearchSource] | None = None


class OpenPageAction(_SdkModel):
    type: Literal["open_page"]
    url: str | None = None


class FindInPageAction(_SdkModel):
    pattern: str
    type: Literal["find_in_page"]
    url: str


class WebSearchCall(_SdkModel):
    id: str
    action: SearchAction | OpenPageAction | FindInPageAction
    status: Literal["in_progress", "searching", "completed", "failed"]
    type: Literal["web_search_call"]


class CodeLogs(_SdkModel):
    logs: str
    type: Literal["logs"]


class CodeImage(_SdkModel):
    type: Literal["image"]
    url: str


class CodeInterpreterCall(_SdkModel):
    id: str
    code: str | None = None
    container_id: str
    outputs: list[CodeLogs | CodeImage] | None = None
    status: Literal["in_progress", "completed", "incomplete", "interpreting", "failed"]
    type: Literal["code_interpreter_call"]


class LocalShellAction(_SdkModel):
    command: list[str]
    env: dict[str, str]
    type: Literal["exec"]
    timeout_ms: int | None = None
    user: str | None = None
    working_directory: str | None = None


class LocalShellCall(_SdkModel):
    id: str
    action: LocalShellAction
    call_id: str
    status: Status
    type: Literal["local_shell_call"]


class CreateFile(_SdkModel):
    diff: str
    path: str
    type: Literal["create_file"]


class DeleteFile(_SdkModel):
    path: str
    type: Literal["delete_file"]


class UpdateFile(_SdkModel):
    diff: str
    path: str
    type: Literal["update_file"]


class ApplyPatchCall(_SdkModel):
    id: str
    call_id: str
    operation: CreateFile | DeleteFile | UpdateFile
    status: Literal["in_progress", "completed"]
    type: Literal["apply_patch_call"]
    created_by: str | None = None


class ShellAction(_SdkModel):
    commands: list[str]
    max_output_length: int | None = None
    timeout_ms: int | None = None


class LocalEnvironment(_SdkModel):
    type: Literal["local"]


class ContainerReference(_SdkModel):
    container_id: str
    type: Literal["container_reference"]


class ShellCall(_SdkModel):
    id: str
    action: ShellAction
    call_id: str
    environment: LocalEnvironment | ContainerReference | None = None
    status: Status
    type: Literal["shell_call"]
    created_by: str | None = None


class TimeoutOutcome(_SdkModel):
    type: Literal["timeout"]


class ExitOutcome(_SdkModel):
    exit_code: int
    type: Literal["exit"]


class ShellOutput(_SdkModel):
    outcome: TimeoutOutcome | ExitOutcome
    stderr: str
    stdout: str
    created_by: str | None = None


class ShellCallOutput(_SdkModel):
    id: str
    call_id: str
    max_output_length: int | None = None
    output: list[ShellOutput]
    status: Status
    type: Literal["shell_call_output"]
    created_by: str | None = None


class ToolSearchCall(_SdkModel):
    id: str
    arguments: Any
    call_id: str | None = None
    execution: Literal["server", "client"]
    status: Status
    type: Literal["tool_search_call"]
    created_by: str | None = None


RESPONSE_ITEM_MODELS: dict[str, type[BaseModel]] = {
    "mcp_call": McpCall,
    "mcp_list_tools": PermissiveItem,
    "mcp_approval_request": McpApprovalRequest,
    "mcp_approval_response": McpApprovalResponse,
    "custom_tool_call": CustomToolCall,
    "custom_tool_call_output": CustomToolCallOutput,
    "computer_call": ComputerCall,
    "computer_call_output": ComputerCallOutput,
    "file_search_call": FileSearchCall,
    "web_search_call": WebSearchCall,
    "image_generation_call": ImageGenerationCall,
    "code_interpreter_call": CodeInterpreterCall,
    "local_shell_call": LocalShellCall,
    "local_shell_call_output": LocalShellCallOutput,
    "apply_patch_call": ApplyPatchCall,
    "apply_patch_call_output": ApplyPatchCallOutput,
    "shell_call": ShellCall,
    "shell_call_output": ShellCallOutput,
    "tool_search_call": ToolSearchCall,
    "compaction": Compaction,
    "compaction_trigger": CompactionTrigger,
}
"""Union tag -> model, for every SDK-derived item kind reproduced here."""
