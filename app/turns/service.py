"""Turns as the API shows them: read and list (the caller's own), and start, follow and cancel through
the engine's front door (app/runtime/engine.py) once the caller may."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, aclosing

from sqlalchemy.ext.asyncio import AsyncSession

from app.auth.principal import Principal
from app.auth.stream_token import mint_stream_token
from app.autonomy.plan import Plan
from app.container import Container
from app.core.db import unit_of_work
from app.core.pagination import page_of
from app.errors import NotFound
from app.models import Turn
from app.runtime.engine import Started, TurnEngine, TurnRequest
from app.runtime.port.events import Followed
from app.runtime.port.journal import Supersedes
from app.sessions.service import SessionService, idle_ttl
from app.turns import schemas
from app.turns.repository import TurnRepository


class TurnService:
    def __init__(self, container: Container, principal: Principal) -> None:
        self.container = container
        self.engine: TurnEngine = container.turn_engine
        self.principal = principal

    def uow(self) -> AbstractAsyncContextManager[AsyncSession]:
        return unit_of_work(self.container.session_factory)

    async def start(
        self,
        session_id: uuid.UUID,
        body: schemas.TurnCreate,
        *,
        turn_id: uuid.UUID | None = None,
        supersedes: Supersedes | None = None,
        channel: schemas.Channel = "api",
    ) -> Started:
        """Start a turn, or handle the session's active turn as `body.multitask_strategy` says.

        `turn_id` names the new turn (a schedule's firing chooses it in advance, so a retried start
        finds the turn instead of starting a second one); `channel` is the door it came through. `supersedes`:
        the turn regenerates that one (app/branching/regenerate.py), whose messages leave the history in the
        statement that stores it."""
        request = request_of(body, channel, supersedes)
        return await self.engine.start(self.principal, session_id, request, turn_id=turn_id)

    async def get(self, turn_id: uuid.UUID) -> schemas.Turn:
        async with self.uow() as db:
            turn = await self.load(db, turn_id)
            if turn.mode != "autonomous":
                return schemas.Turn.of(turn)
            events = await TurnRepository(db, self.principal.tenant_id).plan_events(turn_id)
        steps = Plan.of_events(events).steps
        plan = [schemas.PlanItem(id=s.id, title=s.title, status=s.status, output=s.output) for s in steps]  # type: ignore[arg-type]
        return schemas.Turn.of(turn, plan)

    async def load(self, db: AsyncSession, turn_id: uuid.UUID) -> Turn:
        turn = await TurnRepository(db, self.principal.tenant_id).get(self.principal, turn_id)
        if turn is None:
            raise NotFound(f"Turn {turn_id} not found")
        return turn

    def _sessions(self, db: AsyncSession) -> SessionService:
        return SessionService(db, self.principal, ttl=idle_ttl(self.container))

    async def list(self, session_id: uuid.UUID, *, limit: int, cursor: str | None) -> schemas.TurnPage:
        async with self.uow() as db:
            await self._sessions(db).get(session_id)
            rows = await TurnRepository(db, self.principal.tenant_id).page(
                self.principal, session_id, limit=limit, cursor=cursor
            )
        items, next_cursor = page_of(rows, limit)
        return schemas.TurnPage(items=[schemas.Turn.of(t) for t in items], next_cursor=next_cursor)

    async def stream_token(self, turn_id: uuid.UUID) -> schemas.StreamToken:
        """Only for a turn the caller may read: the token carries the same tenant and owner checks."""
        await self.get(turn_id)
        assert self.container.signing is not None
        minted = mint_stream_token(
            self.container.signing, self.principal, turn_id, issuer=self.container.settings.signing.issuer
        )
        return schemas.StreamToken(token=minted.token, expires_in=minted.expires_in)

    async def finished(self, turn_id: uuid.UUID) -> schemas.Turn:
        """Wait for the turn's run to end (here, or through the store for a queued turn, until this replica
        drains), then read it."""
        await self.get(turn_id)
        await self.engine.finished(self.principal.tenant_id, turn_id)
        return await self.get(turn_id)

    async def cancel(self, turn_id: uuid.UUID) -> schemas.Turn:
        await self.get(turn_id)
        await self.engine.cancel(self.principal.tenant_id, turn_id)
        return await self.get(turn_id)

    async def close_session(self, session_id: uuid.UUID) -> None:
        """Close a session; a turn still running or waiting for approvals in it is cancelled."""
        async with self.uow() as db:
            await self._sessions(db).close(session_id)
        await self.engine.close_session(self.principal.tenant_id, session_id)

    async def follow(self, turn_id: uuid.UUID, after: int) -> AsyncIterator[Followed]:
        """The turn's events after `after`, stored then live, up to its last `turn.ended` (TurnEngine.follow)."""
        await self.get(turn_id)
        async with aclosing(self.engine.follow(self.principal.tenant_id, turn_id, after)) as events:  # type: ignore[type-var]
            async for followed in events:
                yield followed


def request_of(
    body: schemas.TurnCreate, channel: schemas.Channel = "api", supersedes: Supersedes | None = None
) -> TurnRequest:
    asked = body.limits.model_dump(exclude_none=True, exclude={"max_steps"}) if body.limits else {}
    return TurnRequest(
        input=body.text(),
        mode=body.mode,
        multitask_strategy=body.multitask_strategy,
        limits=asked,
        max_steps=body.limits.max_steps if body.limits else None,
        channel=channel,
        output_schema=body.output_schema,
        files=tuple((p.type, p.file_id) for p in body.file_parts()),
        supersedes=supersedes,
    )
