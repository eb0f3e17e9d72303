"""Human decisions on gated tool calls; the last decision of a batch resumes the turn at that call."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.approvals import schemas
from app.approvals.repository import ApprovalRepository
from app.auth.principal import Principal
from app.container import Container
from app.core.db import unit_of_work
from app.core.pagination import page_of
from app.errors import Conflict, NotFound
from app.models import Approval, Session, Turn
from app.models.base import utcnow
from app.runtime.manager import TurnManager
from app.runtime.port.journal import HumanDecision, TurnRun
from app.runtime.resume import human_decision, resume_run
from app.runtime.store.quota import token_quota_of
from app.runtime.stream import TurnStream
from app.sessions.repository import SessionRepository
from app.sessions.service import SessionService, idle_ttl, session_not_open
from app.turns.repository import TurnRepository
from app.turns.schemas import Channel
from app.usage.service import LimitsService


@dataclass(frozen=True, slots=True)
class Resumed:
    turn_id: uuid.UUID
    stream: TurnStream


class ApprovalService:
    def __init__(self, container: Container, principal: Principal) -> None:
        self.container = container
        self.manager: TurnManager = container.turns
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
    ) -> Resumed | schemas.StillWaiting:
        item = schemas.BatchDecisionItem(approval_id=approval_id, **body.model_dump())
        async with unit_of_work(self.container.session_factory) as db:
            turn_id = (await self._load(db, approval_id, write=True)).turn_id
        return await self.decide_batch(turn_id, schemas.BatchDecision(decisions=[item]), channel=channel)

    async def decide_batch(
        self, turn_id: uuid.UUID, body: schemas.BatchDecision, *, channel: Channel = "api"
    ) -> Resumed | schemas.StillWaiting:
        """All decisions or none; the turn row is locked so concurrent deciders queue behind each other.

        `channel` is the door the decisions came through (the REST API, or an MCP / A2A client)."""
        ids = [d.approval_id for d in body.decisions]
        if len(set(ids)) != len(ids):
            raise Conflict("The same approval appears twice in one request")
        async with unit_of_work(self.container.session_factory) as db:
            await self._own_turn(
                db, turn_id
            )  # another tenant's or user's turn (admin too): 404 before any wait or lock
        self.manager.admit()
        # A client may decide as soon as it sees approval.required, while the run is still settling.
        await self.manager.wait(turn_id)
        async with unit_of_work(self.container.session_factory) as db:
            turn, session = await self._lock_turn(db, turn_id)
            for item in body.decisions:
                approval = await self._load(db, item.approval_id, for_update=True, write=True)
                if approval.turn_id != turn.id:
                    raise NotFound(f"Approval {item.approval_id} does not belong to turn {turn.id}")
                self._apply(approval, item, channel)
            await db.flush()
            approvals = ApprovalRepository(db, self.principal.tenant_id)
            batch = await approvals.of_turn(turn.id, loop=turn.loop_count)
            waiting = [a for a in batch if a.status == "pending"]
            if waiting:
                return schemas.StillWaiting(
                    turn_id=turn.id, pending=[schemas.Approval.model_validate(a) for a in waiting]
                )
            run = await self._claim(db, turn, session, ids[-1], {a.tool_call_id: human_decision(a) for a in batch})
        return Resumed(turn.id, self.manager.launch(run))

    async def _own_turn(self, db: AsyncSession, turn_id: uuid.UUID, *, for_update: bool = False) -> Turn:
        writer = self.principal.writer
        turn = await TurnRepository(db, self.principal.tenant_id).get(writer, turn_id, for_update=for_update)
        if turn is None:
            raise NotFound(f"Turn {turn_id} not found")
        return turn

    async def _lock_turn(self, db: AsyncSession, turn_id: uuid.UUID) -> tuple[Turn, Session]:
        turn = await self._own_turn(db, turn_id, for_update=True)
        if turn.status != "interrupted":
            raise Conflict(f"Turn {turn_id} is {turn.status}: it does not wait for approvals")
        sessions = SessionService(db, self.principal, ttl=idle_ttl(self.container))
        session = await SessionRepository(db, self.principal.tenant_id).get(self.principal.writer, turn.session_id)
        status = await sessions.status_of(session) if session is not None else "closed"
        if session is None or status != "open":
            raise session_not_open(turn.session_id, status)
        return turn, session

    def _apply(self, approval: Approval, item: schemas.BatchDecisionItem, channel: Channel) -> None:
        if approval.status != "pending":
            raise Conflict(f"Approval {approval.id} was already decided ({approval.status})")
        approval.status = "approved" if item.decision == "approve" else "denied"
        approval.decision_reason = item.reason
        approval.edited_arguments = item.arguments if item.decision == "approve" else None
        approval.decided_by = self.principal.sub
        approval.decided_channel = channel
        approval.decided_at = utcnow()

    async def _claim(
        self,
        db: AsyncSession,
        turn: Turn,
        session: Session,
        approval_id: uuid.UUID,
        decisions: dict[str, HumanDecision],
    ) -> TurnRun:
        turns = TurnRepository(db, self.principal.tenant_id)
        if not await turns.claim_for_resume(turn.id, approval_id=approval_id, runner_id=self.manager.runner_id):
            raise Conflict(f"Turn {turn.id} was resumed by another decision")
        await db.refresh(turn)
        ceilings = await LimitsService(db, self.principal).ceilings()
        quota = token_quota_of(ceilings)
        return await resume_run(self.manager.store, turn, session, approval_id, decisions, token_quota=quota)
