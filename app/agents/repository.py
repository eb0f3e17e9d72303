from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Row, Select, and_, select

from app.core.pagination import paginate
from app.core.repository import TenantRepository
from app.models import Agent, AgentVersion


class AgentRepository(TenantRepository[Agent]):
    model = Agent

    async def get(self, agent_id: uuid.UUID) -> Agent | None:
        return await self.first(self.readable().where(Agent.id == agent_id))

    async def get_for_update(self, agent_id: uuid.UUID) -> Agent | None:
        return await self.first(self.readable().where(Agent.id == agent_id).with_for_update())

    async def page(self, *, limit: int, cursor: str | None, include_archived: bool) -> list[Agent]:
        stmt = self.readable()
        if not include_archived:
            stmt = stmt.where(Agent.archived_at.is_(None))
        return await self.all(paginate(stmt, created_at=Agent.created_at, row_id=Agent.id, limit=limit, cursor=cursor))


class AgentVersionRepository(TenantRepository[AgentVersion]):
    model = AgentVersion

    def _of(self, agent_id: uuid.UUID) -> Select[tuple[AgentVersion]]:
        return self.readable().where(AgentVersion.agent_id == agent_id)

    async def get(self, agent_id: uuid.UUID, version: int) -> AgentVersion | None:
        return await self.first(self._of(agent_id).where(AgentVersion.version == version))

    async def list_for(self, agent_id: uuid.UUID) -> list[AgentVersion]:
        return await self.all(self._of(agent_id).order_by(AgentVersion.version))

    async def pinned(self, agent_id: uuid.UUID, version: int | None) -> Row[Any] | None:
        """`archived_at`, `version`, `config` of the agent at the given version (its current one if
        None) in one query; `version` is None when the agent has no such version."""
        number = version if version is not None else Agent.current_version
        stmt = (
            select(Agent.archived_at, AgentVersion.version, AgentVersion.config)
            .outerjoin(AgentVersion, and_(AgentVersion.agent_id == Agent.id, AgentVersion.version == number))
            .where(Agent.tenant_id == self.tenant_id, Agent.id == agent_id)
        )
        return (await self.session.execute(stmt)).first()

    async def current_for(self, agents: list[Agent]) -> dict[uuid.UUID, AgentVersion]:
        if not agents:
            return {}
        pairs = [(a.id, a.current_version) for a in agents]
        stmt = self.readable().where(AgentVersion.agent_id.in_([a for a, _ in pairs]))
        rows = await self.all(stmt)
        wanted = set(pairs)
        return {r.agent_id: r for r in rows if (r.agent_id, r.version) in wanted}
