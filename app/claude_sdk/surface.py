"""The tool surface a Claude Code session sees, and the names it calls them by.

Built-ins and `mcp:` tools are served by one in-process SDK MCP server (`agent`): the model calls
them `mcp__agent__NAME`, our events, policies and ledger know them by their plain name (`echo`,
`github__create_issue`) exactly as on the LangGraph runtime. Executing them is ours: the handler
hands each call to the session's current turn, which runs it through the turn's `ToolBox` (MCP
calls go to our gateway with the per-turn token and the call's `X-Idempotency-Key`, which a CLI
configured with a static HTTP server could not send). Claude Code's own tools are off (`tools=[]`)
unless the agent lists them as `claude:NAME`; then they keep their name (`Read`, `Bash`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from claude_agent_sdk import SdkMcpTool, create_sdk_mcp_server
from claude_agent_sdk.types import McpSdkServerConfig

from app.providers.base import ToolSpec
from app.tools.base import ToolResult

SERVER_NAME = "agent"
SDK_PREFIX = f"mcp__{SERVER_NAME}__"

RunTool = Callable[[str, dict[str, Any]], Awaitable[ToolResult]]
"""Runs one call of an in-process tool by its plain name (the session routes it to its current turn)."""


PATH_ARGUMENTS = ("file_path", "path", "notebook_path")
"""Where Claude Code's file tools take the path they act on."""


def plain_name(sdk_name: str) -> str:
    """The name our events and policies use for a tool the model called."""
    return sdk_name.removeprefix(SDK_PREFIX)


def claude_tools(tool_refs: list[str]) -> list[str]:
    return [ref.removeprefix("claude:") for ref in tool_refs if ref.startswith("claude:")]


@dataclass(frozen=True, slots=True)
class ToolSurface:
    served: tuple[ToolSpec, ...]
    """Built-ins and discovered MCP tools, by plain name, served in-process."""
    native: tuple[str, ...]
    """Claude Code's own tools the agent enabled (`claude:NAME`)."""
    workdir: Path | None = None
    """The session's working directory, the only place native tools may reach."""

    def known(self, name: str) -> bool:
        """A plain name the model may call this session; anything else never leaves the service."""
        return name in self.native or any(spec.name == name for spec in self.served)

    def is_native(self, name: str) -> bool:
        return name in self.native

    def escapes(self, name: str, arguments: dict[str, Any]) -> str | None:
        """The path argument of a native tool call that lies outside the working directory, if any.

        Claude Code itself lets its read tools reach the whole file system, so this check is what
        confines them; a path is resolved (symlinks followed) against the working directory.
        """
        if not self.is_native(name) or self.workdir is None:
            return None
        root = self.workdir.resolve()
        for key in PATH_ARGUMENTS:
            value = arguments.get(key)
            if value is None:
                continue
            text = str(value)
            if text.startswith("~") or not (root / text).resolve().is_relative_to(root):
                return text
        pattern = str(arguments.get("pattern", "")) if name == "Glob" else ""
        if pattern.startswith(("/", "~")) or ".." in Path(pattern).parts:
            return pattern
        return None

    def server(self, run: RunTool) -> McpSdkServerConfig:
        return create_sdk_mcp_server(SERVER_NAME, tools=[_served(spec, run) for spec in self.served])


def _served(spec: ToolSpec, run: RunTool) -> SdkMcpTool[Any]:
    async def handler(arguments: dict[str, Any]) -> dict[str, Any]:
        result = await run(spec.name, arguments)
        return {"content": [{"type": "text", "text": result.content}], "is_error": result.is_error}

    schema = {"type": "object", "properties": {}, **spec.input_schema}
    return SdkMcpTool(name=spec.name, description=spec.description, input_schema=schema, handler=handler)
