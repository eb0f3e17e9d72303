"""Human decisions on gated tool calls; the last decision of a batch resumes the turn at that call."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from app.approvals import schemas
from app.approvals.repository import ApprovalRepository
from app.auth.principal import Principal
from app.container import Container
from app.core.db import unit_of_work
from app.core.pagination import page_of
from app.errors import Conflict, NotFound, session_not_open
from app.models import Approval, Turn
from app.models.base import utcnow
from app.runtime.engine import Started, TurnEngine
from app.sessions.repository import SessionRepository
from app.sessions.service import SessionService, idle_ttl
from app.turns.repository import TurnRepository
from app.turns.schemas import Channel


class ApprovalService:
    def __init__(self, container: Container, principal: Principal) -> None:
        self.container = container
        self.engine: TurnEngine = container.turn_engine
        self.principal = principal

    async def list(
        self, *, status: str | None, session_id: uuid.UUID | None, limit: int, cursor: str | None
    ) -> schemas.ApprovalPage:
        async with unit_of_work(self.container.session_factory) as db:
            rows = await ApprovalRepository(db, self.principal.tenant_id).page(
                self.principal, status=status, session_id=session_id, limit=limit, cursor=cursor
            )
        items, next_cursor = page_of(rows, limit)
        return schemas.ApprovalPage(items=[schemas.Approval.model_validate(a) for a in items], next_cursor=next_cursor)

    async def get(self, approval_id: uuid.UUID) -> schemas.Approval:
        async with unit_of_work(self.container.session_factory) as db:
            return schemas.Approval.model_validate(await self._load(db, approval_id))

    async def _load(
        self, db: AsyncSession, approval_id: uuid.UUID, *, for_update: bool = False, write: bool = False
    ) -> Approval:
        scope = self.principal.writer if write else self.principal
        found = await ApprovalRepository(db, self.principal.tenant_id).get(scope, approval_id, for_update=for_update)
        if found is None:
            raise NotFound(f"Approval {approval_id} not found")
        return found

    async def decide(
        self, approval_id: uuid.UUID, body: schemas.ApprovalDecision, *, channel: Channel = "api"
    ) -> Started | schemas.StillWaiting:
        item = schemas.BatchDecisionItem(approval_id=approval_id, **body.model_dump())
        async with unit_of_work(self.container.session_factory) as db:
            turn_id = (await self._load(db, approval_id, write=True)).turn_id
        return await self.decide_batch(turn_id, schemas.BatchDecision(decisions=[item]), channel=channel)

    async def decide_batch(
        self, turn_id: uuid.UUID, body: schemas.BatchDecision, *, channel: Channel = "api"
    ) -> Started | schemas.StillWaiting:
        """All decisions or none, in the engine's resume (the turn row locked, so concurrent deciders
        queue behind each other); the last one of the batch resumes the turn.

        `channel` is the door the decisions came through (the REST API, or an MCP / A2A client)."""
        ids = [d.approval_id for d in body.decisions]
        if len(set(ids)) != len(ids):
            raise Conflict("The same approval appears twice in one request")
        async with unit_of_work(self.container.session_factory) as db:
            await self._own_turn(db, turn_id)  # another tenant's or user's turn (admin too): 404 before any lock
        waiting: list[schemas.Approval] = []

        async def record(db: AsyncSession) -> uuid.UUID | None:
            turn = await self._lock_turn(db, turn_id)
            for item in body.decisions:
                approval = await self._load(db, item.approval_id, for_update=True, write=True)
                if approval.turn_id != turn.id:
                    raise NotFound(f"Approval {item.approval_id} does not belong to turn {turn.id}")
                self._apply(approval, item, channel)
            await db.flush()
            batch = await ApprovalRepository(db, self.principal.tenant_id).of_turn(turn.id, loop=turn.loop_count)
            waiting.extend(schemas.Approval.model_validate(a) for a in batch if a.status == "pending")
            return None if waiting else ids[-1]

        started = await self.engine.resume(self.principal, turn_id, record)
        return started if started is not None else schemas.StillWaiting(turn_id=turn_id, pending=waiting)

    async def _own_turn(self, db: AsyncSession, turn_id: uuid.UUID, *, for_update: bool = False) -> Turn:
        writer = self.principal.writer
        turn = await TurnRepository(db, self.principal.tenant_id).get(writer, turn_id, for_update=for_update)
        if turn is None:
            raise NotFound(f"Turn {turn_id} not found")
        return turn

    async def _lock_turn(self, db: AsyncSession, turn_id: uuid.UUID) -> Turn:
        turn = await self._own_turn(db, turn_id, for_update=True)
        if turn.status != "interrupted":
            raise Conflict(f"Turn {turn_id} is {turn.status}: it does not wait for approvals")
        sessions = SessionService(db, self.principal, ttl=idle_ttl(self.container))
        session = await SessionRepository(db, self.principal.tenant_id).get(self.principal.writer, turn.session_id)
        status = await sessions.status_of(session) if session is not None else "closed"
        if session is None or status != "open":
            raise session_not_open(turn.session_id, status)
        return turn

    def _apply(self, approval: Approval, item: schemas.BatchDecisionItem, channel: Channel) -> None:
        if approval.status != "pending":
            raise Conflict(f"Approval {approval.id} was already decided ({approval.status})")
        approval.status = "approved" if item.decision == "approve" else "denied"
        approval.decision_reason = item.reason
        approval.edited_arguments = item.arguments if item.decision == "approve" else None
        approval.decided_by = self.principal.sub
        approval.decided_channel = channel
        approval.decided_at = utcnow()
