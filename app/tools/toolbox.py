"""The tool surface of one turn: the agent's built-ins plus the MCP tools its servers expose."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from app.governance.policy import Decision
from app.providers.base import ToolCall, ToolSpec
from app.tools.base import ToolResult
from app.tools.builtin import BUILTIN_TOOLS, run_builtin
from app.tools.mcp_gateway import McpGatewayClient, filter_tools
from app.tools.recorded import Recording


class LocalTools(Protocol):
    """Tools served in-process with state of their own (the memory tools), beside the stateless built-ins."""

    @property
    def specs(self) -> Sequence[ToolSpec]: ...

    async def run(self, name: str, arguments: dict[str, Any]) -> ToolResult: ...


class ToolBox:
    def __init__(
        self,
        *,
        tool_refs: list[str],
        gateway: McpGatewayClient | None,
        gateway_token: Callable[[], str] | None,
        team_unit: str,
        local: LocalTools | None = None,
        recording: Recording | None = None,
    ) -> None:
        refs = [r.removeprefix("builtin:") for r in tool_refs if r.startswith("builtin:")]
        self._local = local
        self._local_names = frozenset(spec.name for spec in local.specs) if local else frozenset()
        self.builtins = [name for name in refs if name in BUILTIN_TOOLS] + sorted(self._local_names)
        """What the model sees by a plain name: the stateless built-ins and the local tools."""
        self.servers = [r.removeprefix("mcp:") for r in tool_refs if r.startswith("mcp:")]
        self._gateway = gateway if gateway_token is not None and self.servers else None
        self._token = gateway_token
        self._team_unit = team_unit
        self._mcp_specs: list[ToolSpec] | None = None
        self._recording = recording
        """Set for an eval session with recorded tools: every call is answered from it, none runs."""

    async def specs(self) -> list[ToolSpec]:
        """Built-ins, then MCP tools from `tools/list` (raises McpGatewayUnavailable; discovered once)."""
        specs = [BUILTIN_TOOLS[name].spec for name in self.builtins if name in BUILTIN_TOOLS]
        specs += self._local.specs if self._local else ()
        if self._gateway is None or self._token is None:
            return specs
        if self._mcp_specs is None:
            discovered = await self._gateway.list_tools(self._token(), self._team_unit)
            self._mcp_specs = filter_tools(discovered, self.servers)
        return specs + self._mcp_specs

    async def known(self, name: str) -> bool:
        """A built-in of the agent, or a tool this turn's MCP discovery returned (discovers if it has
        not yet: raises McpGatewayUnavailable). Nothing else may ever be sent anywhere."""
        if name in self.builtins:
            return True
        if not self.is_mcp(name):
            return False
        return any(spec.name == name for spec in await self.specs())

    def is_mcp(self, name: str) -> bool:
        server, sep, _ = name.partition("__")
        return bool(sep) and server in self.servers

    def refusal(self, call: ToolCall, policy_hash: str) -> Decision | None:
        """Why this call may not run at all (a recorded eval turn's call with no recording), or None."""
        return None if self._recording is None else self._recording.refusal(call, policy_hash)

    async def run(self, call: ToolCall, idempotency_key: str) -> ToolResult:
        if self._recording is not None:
            recorded = self._recording.result(call)
            return recorded or ToolResult(f"no recorded result for {call.name}", is_error=True)
        if self._local is not None and call.name in self._local_names:
            return await self._local.run(call.name, call.arguments)
        if call.name in self.builtins:
            return await run_builtin(call.name, call.arguments)
        if self.is_mcp(call.name) and self._gateway is not None and self._token is not None:
            return await self._gateway.call_tool(
                self._token(), self._team_unit, call.name, call.arguments, idempotency_key
            )
        return ToolResult(content=f"tool {call.name!r} is not available to this agent", is_error=True)
