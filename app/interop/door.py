"""The one front door the MCP and A2A servers use to run turns: start, follow, decide, cancel, read.

Each protocol server calls only this module, so each of its calls is an ordinary turn of the caller:
same tenant and owner checks, policy gate, approvals, budgets, quota, stored events and continuation
after a crash, with the turn's `channel` saying which door it came through. It sits on the services
the REST routes use (turns, approvals, sessions, agents), which reach the engine through its front
door, `TurnEngine`.

Events are the engine's typed events as dicts (`type`, `seq`, …), followed across a hand-over the way
the stream adapters follow them (`AdapterRuns.through_hand_overs`), so a caller sees a whole answer
even when the replica that streamed it died.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.adapters.runs import AdapterRuns
from app.agents.schemas import Agent
from app.agents.service import AgentService
from app.approvals.schemas import Approval, BatchDecision, BatchDecisionItem
from app.approvals.service import ApprovalService
from app.auth.principal import Principal
from app.container import Container
from app.core.db import unit_of_work
from app.errors import NotFound
from app.runtime.engine import Started
from app.sessions.repository import SessionRepository
from app.sessions.schemas import SessionCreate
from app.sessions.service import new_session
from app.turns.repository import TurnRepository
from app.turns.schemas import Channel, Turn, TurnCreate
from app.turns.service import TurnService

AGENT_PAGE = 200
MAX_AGENTS = 2000
"""The agents a tenant's directory lists (tools/list, GET /a2a): a bound, not a page a client asks for."""

Events = AsyncGenerator[dict[str, Any], None]


@dataclass(frozen=True, slots=True)
class Call:
    """A turn being followed: its events from the log (stored, then live) up to its run's `turn.ended`."""

    session_id: uuid.UUID
    turn_id: uuid.UUID
    events: Events


@dataclass(frozen=True, slots=True)
class SessionView:
    id: uuid.UUID
    agent_id: uuid.UUID
    name: str
    """The caller's `external_id` for the session, or its id."""


class Door:
    def __init__(self, container: Container, principal: Principal, channel: Channel) -> None:
        self.container = container
        self.principal = principal
        self.channel: Channel = channel
        self._turns = TurnService(container, principal)
        self._approvals = ApprovalService(container, principal)
        self._runs = AdapterRuns(container, principal)

    async def agents(self) -> list[Agent]:
        """The agents the caller may use (not archived), oldest first."""
        found: list[Agent] = []
        cursor: str | None = None
        async with unit_of_work(self.container.session_factory) as db:
            service = self._agent_service(db)
            while len(found) < MAX_AGENTS:
                page = await service.page(limit=AGENT_PAGE, cursor=cursor)
                found.extend(page.items)
                cursor = page.next_cursor
                if cursor is None:
                    break
        return sorted(found, key=lambda a: (a.created_at, str(a.id)))

    async def agent(self, agent_id: uuid.UUID) -> Agent:
        async with unit_of_work(self.container.session_factory) as db:
            agent = await self._agent_service(db).get(agent_id)
        if agent.archived_at is not None:
            raise NotFound(f"Agent {agent_id} not found")
        return agent

    def _agent_service(self, db: AsyncSession) -> AgentService:
        return AgentService.of(db, self.principal, self.container)

    async def session(self, agent_id: uuid.UUID, name: str | None, *, version: int | None = None) -> uuid.UUID:
        """The caller's session on the agent that `name` names: its id, or its `external_id` (get-or-create);
        with no name, a new session."""
        if name is not None:
            with contextlib.suppress(ValueError):
                session_id = uuid.UUID(name)
                async with unit_of_work(self.container.session_factory) as db:
                    found = await SessionRepository(db, self.principal.tenant_id).get(self.principal, session_id)
                if found is not None and found.agent_id == agent_id:
                    return found.id
        data = SessionCreate(agent_id=agent_id, agent_version=version, external_id=name)
        session, _ = await new_session(self.container, self.principal, data)
        return session.id

    async def ask(self, session_id: uuid.UUID, text: str) -> Call:
        started = await self._turns.start(session_id, TurnCreate(input=text), channel=self.channel)
        events = self._runs.through_hand_overs(started.turn_id, started.follow, started.first_seq - 1)
        return Call(session_id, started.turn_id, events)

    async def conversation(self, session_id: uuid.UUID) -> SessionView:
        """The session as a protocol names it: its agent and the caller's name for it (or its id)."""
        async with unit_of_work(self.container.session_factory) as db:
            found = await SessionRepository(db, self.principal.tenant_id).get(self.principal, session_id)
        if found is None:
            raise NotFound(f"Session {session_id} not found")
        return SessionView(found.id, found.agent_id, found.external_id or str(found.id))

    async def latest(self, session_id: uuid.UUID) -> Turn | None:
        """The session's latest turn, if any (404 for a session the caller may not see)."""
        page = await self._turns.list(session_id, limit=1, cursor=None)
        return page.items[0] if page.items else None

    async def follow(self, turn_id: uuid.UUID, after: int = 0) -> Call:
        """The turn's events after `after`, stored then live, through any resumed run to its last end."""
        turn = await self._turns.get(turn_id)
        follow = partial(self._turns.follow, turn_id)
        return Call(turn.session_id, turn_id, self._runs.through_hand_overs(turn_id, follow, after))

    async def latest_run(self, turn_id: uuid.UUID) -> Call:
        """The turn's latest run (after a decision: the resumed one), from its `turn.started`."""
        started = self._turns.engine.first_seq_here(turn_id)
        if started is None:  # not running here: where its latest run started is stored
            async with unit_of_work(self.container.session_factory) as db:
                started = await TurnRepository(db, self.principal.tenant_id).last_seq_of(turn_id, "turn.started")
        return await self.follow(turn_id, (started or 1) - 1)

    async def turn(self, turn_id: uuid.UUID) -> Turn:
        return await self._turns.get(turn_id)

    async def pending(self, turn_id: uuid.UUID) -> list[Approval]:
        turn = await self._turns.get(turn_id)
        page = await self._approvals.list(status="pending", session_id=turn.session_id, limit=100, cursor=None)
        return [a for a in page.items if a.turn_id == turn_id]

    async def decide(self, turn_id: uuid.UUID, decisions: list[BatchDecisionItem]) -> Call | None:
        """All decisions at once (as `POST /turns/{id}/approvals`); the resumed run, or None while others wait."""
        outcome = await self._approvals.decide_batch(turn_id, BatchDecision(decisions=decisions), channel=self.channel)
        if not isinstance(outcome, Started):
            return None
        turn = await self._turns.get(turn_id)
        events = self._runs.through_hand_overs(turn_id, outcome.follow, outcome.first_seq - 1)
        return Call(turn.session_id, turn_id, events)

    async def cancel(self, turn_id: uuid.UUID) -> Turn:
        return await self._turns.cancel(turn_id)
