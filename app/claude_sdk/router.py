"""The callbacks a session's Claude Code process is started with, routed to the turn running now.

A client outlives its turns, but its hooks, permission callback and in-process tools must act for
the current turn (its gate, its ledger, its gateway token). Between turns nothing is bound and any
call is refused.
"""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import HookContext, HookMatcher, PermissionResultDeny
from claude_agent_sdk.types import HookInput, PermissionResult, SyncHookJSONOutput, ToolPermissionContext

from app.claude_sdk.gate import ToolGate
from app.claude_sdk.surface import RunTool
from app.tools.base import ToolResult

UNBOUND = "no turn is running in this session"


class SessionRouter:
    def __init__(self) -> None:
        self._gate: ToolGate | None = None
        self._run: RunTool | None = None

    def bind(self, gate: ToolGate, run: RunTool) -> None:
        self._gate, self._run = gate, run

    def unbind(self) -> None:
        self._gate = self._run = None

    async def run_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if self._run is None:
            return ToolResult(UNBOUND, is_error=True)
        return await self._run(name, arguments)

    async def pre_tool_use(self, data: HookInput, tool_use_id: str | None, context: HookContext) -> SyncHookJSONOutput:
        if self._gate is None:
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": UNBOUND,
                }
            }
        return await self._gate.pre_tool_use(data, tool_use_id, context)

    async def can_use_tool(
        self, name: str, arguments: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        if self._gate is None:
            return PermissionResultDeny(message=UNBOUND)
        return await self._gate.can_use_tool(name, arguments, context)

    def hooks(self) -> dict[Any, list[HookMatcher]]:
        return {"PreToolUse": [HookMatcher(matcher=None, hooks=[self.pre_tool_use], on_failure="block")]}
