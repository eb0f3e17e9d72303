"""What a run is handed: the runtime that runs it and the services it reaches the world through
(provider, tools, governance, context, quota), assembled per run from the agent's pinned snapshot."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from app.auth.signing import SigningKeys, TurnCredentials
from app.context.engine_client import ContextEngineClient
from app.core.sql import Sql
from app.governance.gate import DEFAULT_OUTPUT_HOLDBACK, NOT_READ, Governance
from app.providers.registry import ProviderRegistry
from app.runtime.port.journal import FileReader, Progress, TurnJournal, TurnRun, TurnRuntime, TurnServices
from app.runtime.store.quota import LedgerQuota
from app.tools.mcp_gateway import McpGatewayClient
from app.tools.recorded import Recording
from app.tools.toolbox import LocalTools, ToolBox

DEFAULT_RUNTIME = "langgraph"
AUTONOMOUS = "autonomous"
"""An autonomous turn runs on `{runtime}+autonomous`: its agent's runtime wrapped in PLAN / PURSUE."""
MemoryToolsFactory = Callable[[str, str, uuid.UUID], LocalTools]
"""(tenant_id, the user the agent acts for, agent_id) → that turn's `builtin:memory` tools."""


@dataclass(frozen=True, slots=True)
class Outbound:
    """How turns reach the outside: signing keys and the optional Context Engine and MCP gateway."""

    signing: SigningKeys | None = None
    issuer: str = "agent-runtime"
    token_ttl: int = 300
    context_engine: ContextEngineClient | None = None
    gateway: McpGatewayClient | None = None


class RunServices:
    """Picks a run's runtime and assembles its services."""

    def __init__(
        self,
        sql: Sql,
        runtimes: Mapping[str, TurnRuntime],
        providers: ProviderRegistry,
        outbound: Outbound,
        memory_tools: MemoryToolsFactory | None = None,
        files: FileReader | None = None,
        output_holdback: int = DEFAULT_OUTPUT_HOLDBACK,
    ) -> None:
        self._sql = sql
        self._output_holdback = output_holdback
        self.files = files
        self.runtimes = dict(runtimes)
        """By the name an agent's configuration gives in `runtime` (default `langgraph`)."""
        self.providers = providers
        self.outbound = outbound
        self.memory_tools = memory_tools

    def runtime_of(self, run: TurnRun) -> TurnRuntime:
        name = str(run.snapshot.get("runtime", DEFAULT_RUNTIME))
        if run.mode == "autonomous":
            name = f"{name}+{AUTONOMOUS}"
        return self.runtimes.get(name) or UnavailableRuntime(name)

    def can_run(self, run: TurnRun) -> bool:
        """Whether this process has the run's runtime and its model's provider."""
        available = self.providers.available(run.snapshot.get("model") or {})
        return available and not isinstance(self.runtime_of(run), UnavailableRuntime)

    def services_of(self, run: TurnRun) -> TurnServices:
        snapshot, out, reads = run.snapshot, self.outbound, run.start_reads
        credentials = None
        if out.signing is not None:
            credentials = TurnCredentials(
                out.signing,
                issuer=out.issuer,
                ttl_seconds=out.token_ttl,
                tenant_id=run.ident.tenant_id,
                agent_id=str(run.ident.agent_id),
                session_id=str(run.ident.session_id),
                turn_id=str(run.ident.turn_id),
                user_sub=run.owner_sub,
            )
        context_token = gateway_token = None
        if credentials is not None and out.context_engine is not None:
            context_token = _bind(credentials, "context-engine")
        if credentials is not None and out.gateway is not None:
            gateway_token = _bind(credentials, "mcp-gateway")
        return TurnServices(
            provider=self.providers.for_turn(run.ident.tenant_id, snapshot["model"], reads.keys if reads else None),
            tools=ToolBox(
                tool_refs=list(snapshot.get("tools", [])),
                gateway=out.gateway,
                gateway_token=gateway_token,
                team_unit=str(snapshot.get("context", {}).get("team_unit", "default")),
                local=self._memory(run),
                recording=Recording.of(snapshot),
            ),
            governance=Governance(
                self._sql,
                tenant_id=run.ident.tenant_id,
                agent_rules=list(snapshot.get("policies", [])),
                tool_blacklist=list(snapshot.get("tool_blacklist", [])),
                first_tenant_rules=reads.tenant_rules if reads else NOT_READ,
                output_holdback=self._output_holdback,
            ),
            context_engine=out.context_engine if context_token else None,
            context_token=context_token,
            quota=LedgerQuota(self._sql, run.ident, run.token_quota) if run.token_quota else None,
            files=self.files,
        )

    def _memory(self, run: TurnRun) -> LocalTools | None:
        if self.memory_tools is None or "builtin:memory" not in run.snapshot.get("tools", []):
            return None
        return self.memory_tools(run.ident.tenant_id, run.owner_sub, run.ident.agent_id)


class UnavailableRuntime:
    """Stands in for a runtime this process does not have: the run fails at once, with a reason."""

    def __init__(self, name: str, reason: str | None = None) -> None:
        self.name = name
        self.reason = reason or f"runtime {name!r} is not available in this service"

    async def run(self, run: TurnRun, services: TurnServices, journal: TurnJournal) -> AsyncIterator[Progress]:
        yield Progress(status="failed", error={"code": "runtime_unavailable", "message": self.reason})


def _bind(credentials: TurnCredentials, audience: str) -> Any:
    return lambda: credentials.token_for(audience)  # type: ignore[arg-type]
