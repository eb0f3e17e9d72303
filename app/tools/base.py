"""What a tool execution returns, whoever ran it (built-in or MCP gateway)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ToolResult:
    content: str
    is_error: bool = False
