"""What both protocol adapters share: a thread is a session, a run is a turn (or the latest run of one).

A protocol's thread id names a session of the caller on the agent: a thread id that already is one
of the caller's sessions on this agent is that session; any other id maps to a session whose id is
derived from (tenant, caller, agent, thread) — created on first use, found again on the next
request, with no table of its own. Events come from the turn's log (`TurnService.follow`, stored
then live, as typed events), so a run replays through an adapter exactly as through
`GET /turns/{id}/events`.

The protocols' clients do not reconnect by themselves, so when a hand-over cuts the turn's stream
(it ends without `turn.ended`) the adapter follows the turn again through the store, from the last
event it passed on, and the client sees the continuation (with its `turn.resumed`) in the same run.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass
from functools import partial
from typing import Any

from app.approvals.schemas import ApprovalDecision
from app.approvals.service import ApprovalService
from app.auth.principal import Principal
from app.container import Container
from app.core.db import unit_of_work
from app.core.sql import INTEGRITY_ERRORS
from app.errors import Conflict, NotFound
from app.runtime.engine import Started
from app.runtime.port.events import Followed, Reconnect
from app.sessions.repository import SessionRepository
from app.sessions.schemas import SessionCreate
from app.sessions.service import new_session
from app.turns.repository import TurnRepository
from app.turns.schemas import TurnCreate
from app.turns.service import TurnService

THREAD_NAMESPACE = uuid.UUID("6f1c2a52-4b7e-4d55-9a53-0c7e8f3b2d19")
MAX_FOLLOWS = 3
"""Follows in a row that bring no event before an adapter's stream gives up on a cut turn."""
FOLLOW_PAUSE_SECONDS = 0.5
"""Before a follow that comes after one which brought nothing, times the follows without an event."""


@dataclass(frozen=True, slots=True)
class Run:
    """One run of a turn as an adapter streams it: the turn's events from the log, in order."""

    session_id: uuid.UUID
    turn_id: uuid.UUID
    events: AsyncGenerator[dict[str, Any], None]


def thread_session_id(principal: Principal, agent_id: uuid.UUID, thread_id: str) -> uuid.UUID:
    return uuid.uuid5(THREAD_NAMESPACE, "\x00".join((principal.tenant_id, principal.sub, str(agent_id), thread_id)))


async def events_of(followed: AsyncIterator[Followed]) -> AsyncGenerator[dict[str, Any], None]:
    """The bodies of a turn's events as they come (a cut run's `Reconnect` ends them)."""
    async with aclosing(followed) as items:  # type: ignore[type-var]
        async for item in items:
            if isinstance(item, Reconnect):
                return
            for event in item:
                yield event.body()


class AdapterRuns:
    def __init__(self, container: Container, principal: Principal) -> None:
        self.container = container
        self.principal = principal
        self.turns = TurnService(container, principal)

    async def thread(self, agent_id: uuid.UUID, thread_id: str) -> uuid.UUID:
        """The session of this thread, created on first use (404 for an unknown or archived agent)."""
        derived = thread_session_id(self.principal, agent_id, thread_id)
        candidates = [derived]
        with contextlib.suppress(ValueError):
            candidates.insert(0, uuid.UUID(thread_id))
        async with unit_of_work(self.container.session_factory) as db:
            repository = SessionRepository(db, self.principal.tenant_id)
            for session_id in candidates:
                session = await repository.get(self.principal.writer, session_id)
                if session is not None and session.agent_id == agent_id:
                    if session.status != "open":
                        raise Conflict(f"Session {session_id} of thread {thread_id!r} is {session.status}")
                    return session_id
        with contextlib.suppress(*INTEGRITY_ERRORS):  # the same thread's other request created it just now
            await new_session(self.container, self.principal, SessionCreate(agent_id=agent_id), session_id=derived)
        return derived

    async def start(self, session_id: uuid.UUID, text: str) -> Run:
        started = await self.turns.start(session_id, TurnCreate(input=text))
        events = self.through_hand_overs(started.turn_id, started.follow, started.first_seq - 1)
        return Run(session_id, started.turn_id, events)

    async def through_hand_overs(
        self, turn_id: uuid.UUID, follow: Callable[[int], AsyncIterator[Followed]], after: int
    ) -> AsyncGenerator[dict[str, Any], None]:
        """The events of `follow(after)`, followed again through the store while a hand-over cut them."""
        idle = 0
        while idle < MAX_FOLLOWS:
            last, ended = after, False
            async with aclosing(events_of(follow(after))) as events:
                async for event in events:
                    yield event
                    after, ended = event["seq"], event["type"] == "turn.ended"
            if ended:
                return
            idle = 0 if after > last else idle + 1
            await asyncio.sleep(FOLLOW_PAUSE_SECONDS * idle)
            follow = partial(self.turns.follow, turn_id)

    async def latest(self, session_id: uuid.UUID) -> Run | None:
        """The latest run of the session's latest turn (after an approval: the resumed part), or None."""
        page = await self.turns.list(session_id, limit=1, cursor=None)
        if not page.items:
            return None
        turn_id = page.items[0].id
        started = self.turns.engine.first_seq_here(turn_id)
        if started is None:  # not running here: where its latest run started is stored
            async with unit_of_work(self.container.session_factory) as db:
                started = await TurnRepository(db, self.principal.tenant_id).last_seq_of(turn_id, "turn.started")
        follow = partial(self.turns.follow, turn_id)
        return Run(session_id, turn_id, self.through_hand_overs(turn_id, follow, (started or 1) - 1))

    async def answer(self, session_id: uuid.UUID, decisions: list[tuple[uuid.UUID, ApprovalDecision]]) -> Run | None:
        """Decide each approval still pending through the approvals service; the run they resume, if any.

        An approval decided already (e.g. through `POST /approvals/{id}`) is skipped, so a client may
        decide through the API and still answer its protocol's interrupt.
        """
        approvals = ApprovalService(self.container, self.principal)
        resumed = None
        for approval_id, decision in decisions:
            current = await approvals.get(approval_id)
            if current.session_id != session_id:
                raise NotFound(f"Approval {approval_id} not found in this thread")
            if current.status != "pending":
                continue
            outcome = await approvals.decide(approval_id, decision)
            if isinstance(outcome, Started):
                events = self.through_hand_overs(outcome.turn_id, outcome.follow, outcome.first_seq - 1)
                resumed = Run(current.session_id, outcome.turn_id, events)
        return resumed
