"""The reads a simulation and an explanation make of what was recorded: receipts, inputs, replies,
tool results, the pinned configuration and the tenant's policy history. Every statement is scoped
to the caller's tenant; nothing here writes."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import Executable, Select, select
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Message, PolicyDecision, Session, TenantPolicy, ToolExecution, Turn

RULE_POINTS = ("pre_llm", "tool")
TEXT_POINTS = ("output", "tool_result")


class RecordedReads:
    def __init__(self, db: AsyncSession, tenant_id: str) -> None:
        self.db = db
        self.tenant_id = tenant_id

    def _scoped(
        self, stmt: Select[Any], table: Any, *, agent_id: uuid.UUID | None, since: datetime | None
    ) -> Select[Any]:
        stmt = stmt.join(Session, Session.id == table.session_id).where(
            table.tenant_id == self.tenant_id, Session.tenant_id == self.tenant_id
        )
        if agent_id is not None:
            stmt = stmt.where(Session.agent_id == agent_id)
        if since is not None:
            stmt = stmt.where(table.created_at >= since)
        return stmt

    async def _rows(self, stmt: Executable) -> list[Row[Any]]:
        return list((await self.db.execute(stmt)).all())

    async def rule_receipts(self, *, agent_id: uuid.UUID | None, since: datetime | None, limit: int) -> list[Row[Any]]:
        """The newest `pre_llm` and `tool` receipts."""
        stmt = select(PolicyDecision).where(PolicyDecision.point.in_(RULE_POINTS))
        stmt = self._scoped(stmt, PolicyDecision, agent_id=agent_id, since=since)
        return await self._rows(stmt.order_by(PolicyDecision.created_at.desc(), PolicyDecision.id.desc()).limit(limit))

    async def replies(self, *, agent_id: uuid.UUID | None, since: datetime | None, limit: int) -> list[Row[Any]]:
        """The newest assistant messages with text (the `output` point's input)."""
        stmt = select(Message).where(Message.role == "assistant", Message.content != "")
        stmt = self._scoped(stmt, Message, agent_id=agent_id, since=since)
        return await self._rows(stmt.order_by(Message.created_at.desc(), Message.id.desc()).limit(limit))

    async def results(self, *, agent_id: uuid.UUID | None, since: datetime | None, limit: int) -> list[Row[Any]]:
        """The newest ledger rows that hold a tool's result (the `tool_result` point's input)."""
        stmt = select(ToolExecution).where(ToolExecution.result.is_not(None))
        stmt = self._scoped(stmt, ToolExecution, agent_id=agent_id, since=since)
        return await self._rows(stmt.order_by(ToolExecution.created_at.desc(), ToolExecution.id.desc()).limit(limit))

    async def sessions(self, ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, Session]:
        stmt = select(Session).where(Session.tenant_id == self.tenant_id, Session.id.in_(set(ids)))
        return {row.id: row for row in (await self.db.execute(stmt)).scalars()}

    async def turn_inputs(self, ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, str]:
        stmt = select(Turn.id, Turn.input).where(Turn.tenant_id == self.tenant_id, Turn.id.in_(set(ids)))
        return {row.id: row.input for row in await self._rows(stmt)}

    async def call_arguments(self, turn_ids: Iterable[uuid.UUID]) -> dict[tuple[uuid.UUID, str], dict[str, Any]]:
        """The arguments of each call of the turns, by (turn, tool_call_id): the ledger's, else the
        assistant message's (a call that was denied never reached the ledger)."""
        turns = set(turn_ids)
        found: dict[tuple[uuid.UUID, str], dict[str, Any]] = {}
        stmt = select(Message.turn_id, Message.tool_calls).where(
            Message.tenant_id == self.tenant_id, Message.turn_id.in_(turns), Message.tool_calls.is_not(None)
        )
        for row in await self._rows(stmt):
            for call in row.tool_calls or ():
                found[(row.turn_id, call["id"])] = call.get("arguments") or {}
        ledger = select(ToolExecution.turn_id, ToolExecution.tool_call_id, ToolExecution.arguments).where(
            ToolExecution.tenant_id == self.tenant_id, ToolExecution.turn_id.in_(turns)
        )
        for row in await self._rows(ledger):
            found[(row.turn_id, row.tool_call_id)] = row.arguments
        return found

    async def text_receipts(self, turn_ids: Iterable[uuid.UUID]) -> list[PolicyDecision]:
        """The `output` and `tool_result` receipts of the turns, oldest first."""
        stmt = select(PolicyDecision).where(
            PolicyDecision.tenant_id == self.tenant_id,
            PolicyDecision.turn_id.in_(set(turn_ids)),
            PolicyDecision.point.in_(TEXT_POINTS),
        )
        return list((await self.db.execute(stmt.order_by(PolicyDecision.created_at))).scalars())

    async def reply_times(self, turn_ids: Iterable[uuid.UUID]) -> list[Row[Any]]:
        """Every assistant message's (turn, id, created_at): the windows output receipts fall in."""
        stmt = select(Message.turn_id, Message.id, Message.created_at).where(
            Message.tenant_id == self.tenant_id, Message.turn_id.in_(set(turn_ids)), Message.role == "assistant"
        )
        return await self._rows(stmt.order_by(Message.created_at, Message.id))

    async def receipt(self, decision_id: uuid.UUID) -> PolicyDecision | None:
        stmt = select(PolicyDecision).where(
            PolicyDecision.tenant_id == self.tenant_id, PolicyDecision.id == decision_id
        )
        return (await self.db.execute(stmt)).scalar_one_or_none()

    async def tenant_policies_at(self, moment: datetime) -> TenantPolicy | None:
        """The tenant's policy version in force at `moment`: the newest created at or before it."""
        stmt = (
            select(TenantPolicy)
            .where(TenantPolicy.tenant_id == self.tenant_id, TenantPolicy.created_at <= moment)
            .order_by(TenantPolicy.version.desc())
            .limit(1)
        )
        return (await self.db.execute(stmt)).scalar_one_or_none()

    async def reply_of(self, turn_id: uuid.UUID, moment: datetime) -> str | None:
        """The first assistant text of the turn stored at or after `moment` (the reply an output receipt judged)."""
        stmt = (
            select(Message.content)
            .where(
                Message.tenant_id == self.tenant_id,
                Message.turn_id == turn_id,
                Message.role == "assistant",
                Message.created_at >= moment,
            )
            .order_by(Message.created_at, Message.id)
            .limit(1)
        )
        return (await self.db.execute(stmt)).scalar_one_or_none()

    async def result_of(self, turn_id: uuid.UUID, tool_call_id: str) -> str | None:
        stmt = select(ToolExecution.result).where(
            ToolExecution.tenant_id == self.tenant_id,
            ToolExecution.turn_id == turn_id,
            ToolExecution.tool_call_id == tool_call_id,
        )
        return (await self.db.execute(stmt.limit(1))).scalar_one_or_none()
