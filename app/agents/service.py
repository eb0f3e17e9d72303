"""Agents: a name plus an immutable, numbered history of configurations."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from app.agents import schemas
from app.agents.config import AgentConfig
from app.agents.repository import AgentRepository, AgentVersionRepository
from app.auth.principal import Principal
from app.claude_sdk.extra import NOT_INSTALLED, RUNTIME_UNAVAILABLE
from app.container import AppState
from app.core.merge_patch import merge_patch
from app.core.pagination import Page, page_of
from app.errors import InvalidDocument, NotFound, RuleViolation
from app.governance.limits import excesses
from app.models import Agent, AgentVersion
from app.models.base import utcnow
from app.usage.service import LimitsService


class AgentService:
    def __init__(
        self, db: AsyncSession, principal: Principal, *, gateway_configured: bool, claude_sdk_installed: bool
    ) -> None:
        self.principal = principal
        self.agents = AgentRepository(db, principal.tenant_id)
        self.versions = AgentVersionRepository(db, principal.tenant_id)
        self.limits = LimitsService(db, principal)
        self.gateway_configured = gateway_configured
        self.claude_sdk_installed = claude_sdk_installed

    @classmethod
    def of(cls, db: AsyncSession, principal: Principal, state: AppState) -> AgentService:
        """The service under this deployment's rules (its MCP gateway, its runtimes)."""
        return cls(
            db,
            principal,
            gateway_configured=bool(state.settings.mcp_gateway.url),
            claude_sdk_installed=state.claude_sdk is not None,
        )

    async def _check(self, config: AgentConfig) -> None:
        """Rules of the deployment and the tenant that a valid configuration must also meet."""
        if config.runtime == "claude_sdk" and not self.claude_sdk_installed:
            raise RuleViolation(RUNTIME_UNAVAILABLE, NOT_INSTALLED)
        servers = [ref for ref in config.tools if ref.startswith("mcp:")]
        if servers and not self.gateway_configured:
            raise RuleViolation(
                "mcp_gateway_not_configured",
                f"{', '.join(servers)}: MCP tools need an MCP gateway, and none is configured (MCP_GATEWAY_URL)",
            )
        over = excesses(await self.limits.ceilings(), config.limits.model_dump(exclude_none=True))
        if over:
            raise RuleViolation(
                "limit_exceeds_tenant_ceiling",
                "; ".join(f"limits.{e.field} {e.limit} is above the tenant's ceiling {e.ceiling}" for e in over),
                errors=[
                    {"loc": ["body", "config", "limits", e.field], "msg": f"at most {e.ceiling}", "type": "ceiling"}
                    for e in over
                ],
            )

    async def create(self, data: schemas.AgentCreate) -> schemas.Agent:
        await self._check(data.config)
        agent = await self.agents.add(
            Agent(
                id=uuid.uuid4(),
                tenant_id=self.principal.tenant_id,
                name=data.name,
                description=data.description,
                current_version=1,
                created_by=self.principal.sub,
            )
        )
        version = await self._add_version(agent, 1, data.config.as_document())
        return _view(agent, version)

    async def page(self, *, limit: int, cursor: str | None) -> Page[schemas.Agent]:
        rows = await self.agents.page(limit=limit, cursor=cursor, include_archived=False)
        items, next_cursor = page_of(rows, limit)
        current = await self.versions.current_for(items)
        return Page(items=[_view(a, current[a.id]) for a in items], next_cursor=next_cursor)

    async def get(self, agent_id: uuid.UUID) -> schemas.Agent:
        agent = await self.load(agent_id)
        return _view(agent, await self.version(agent_id, agent.current_version))

    async def load(self, agent_id: uuid.UUID, *, for_update: bool = False) -> Agent:
        agent = await (self.agents.get_for_update(agent_id) if for_update else self.agents.get(agent_id))
        if agent is None:
            raise NotFound(f"Agent {agent_id} not found")
        return agent

    async def update(self, agent_id: uuid.UUID, data: schemas.AgentUpdate) -> schemas.Agent:
        agent = await self.load(agent_id, for_update=True)
        version = await self.version(agent_id, agent.current_version)
        config = version.config if data.config is None else _patched(version.config, data.config)
        if config != version.config:
            await self._check(AgentConfig.model_validate(config))
        if data.name is not None:
            agent.name = data.name
        if "description" in data.model_fields_set:
            agent.description = data.description
        if config != version.config:
            agent.current_version += 1
            version = await self._add_version(agent, agent.current_version, config)
        agent.updated_at = utcnow()
        await self.agents.session.flush()
        return _view(agent, version)

    async def archive(self, agent_id: uuid.UUID) -> None:
        agent = await self.load(agent_id)
        if agent.archived_at is None:
            agent.archived_at = utcnow()
            await self.agents.session.flush()

    async def list_versions(self, agent_id: uuid.UUID) -> list[AgentVersion]:
        await self.load(agent_id)
        return await self.versions.list_for(agent_id)

    async def version(self, agent_id: uuid.UUID, number: int) -> AgentVersion:
        found = await self.versions.get(agent_id, number)
        if found is None:
            raise NotFound(f"Agent {agent_id} has no version {number}")
        return found

    async def _add_version(self, agent: Agent, number: int, config: dict[str, object]) -> AgentVersion:
        return await self.versions.add(
            AgentVersion(
                id=uuid.uuid4(),
                tenant_id=agent.tenant_id,
                agent_id=agent.id,
                version=number,
                config=config,
                created_by=self.principal.sub,
            )
        )


def _patched(current: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """The current config with the merge patch applied, validated as a whole like a new config."""
    try:
        return AgentConfig.model_validate(merge_patch(current, patch)).as_document()
    except ValidationError as exc:
        raise InvalidDocument.of(exc, "body", "config", what="The patched config") from exc


def _view(agent: Agent, version: AgentVersion) -> schemas.Agent:
    return schemas.Agent(
        id=agent.id,
        name=agent.name,
        description=agent.description,
        version=version.version,
        config=version.config,
        created_at=agent.created_at,
        updated_at=agent.updated_at,
        archived_at=agent.archived_at,
    )
