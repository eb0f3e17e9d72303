"""Fork a session: a new session of the same owner whose history is a copy of the origin's up to a message.

The copies keep the `turn_id` of the origin's turn that wrote them, so a message still leads to its
receipts and usage, which stay with the origin; a fork copies no approvals, ledger rows or usage, so
its tool calls are new calls. The newest compaction summary that covers only kept messages comes
along (re-pointed at the copies); a later one is left behind, and the fork's next compaction rebuilds it.
"""

from __future__ import annotations

import uuid

from app.core.sql import INTEGRITY_ERRORS
from app.errors import Conflict, InvalidInput, NotFound, RuleViolation
from app.models import ACTIVE_STATUSES, Session, Summary
from app.sessions import schemas
from app.sessions.repository import MessageRepository, SummaryRepository
from app.sessions.service import SessionService
from app.turns.repository import TurnRepository

UNFINISHED = (*ACTIVE_STATUSES, "queued")


class ForkService:
    def __init__(self, sessions: SessionService) -> None:
        self.db = sessions.db
        self.sessions = sessions
        tenant_id = sessions.principal.tenant_id
        self.messages = MessageRepository(self.db, tenant_id)
        self.summaries = SummaryRepository(self.db, tenant_id)
        self.turns = TurnRepository(self.db, tenant_id)

    async def fork(self, session_id: uuid.UUID, body: schemas.SessionFork) -> schemas.Session:
        origin = await self.sessions.get(session_id)
        upto = await self._cut(origin, body.at_message_id)
        create = schemas.SessionCreate(
            agent_id=origin.agent_id,
            agent_version=body.agent_version or origin.agent_version,
            metadata=origin.meta,
            external_id=body.external_id,
        )
        try:
            fork = await self.sessions.create(create, owner_sub=origin.owner_sub)
        except NotFound as exc:
            raise InvalidInput(exc.detail, field="body.agent_version") from exc
        except INTEGRITY_ERRORS as exc:
            raise Conflict(
                f"A session with external_id {body.external_id!r} already exists for this agent",
                code="external_id_in_use",
            ) from exc
        fork.forked_from_session_id = origin.id
        kept = await self.messages.history_ids(origin.id, upto=upto)
        fork.forked_from_message_id = kept[-1] if kept else None
        copies = await self.messages.copy_history(origin.id, fork.id, upto=upto)
        await self._carry_summary(origin.id, fork.id, kept, copies, upto)
        await self.db.flush()
        (view,) = await self.sessions.views([fork])
        return view

    async def _cut(self, origin: Session, at_message_id: int | None) -> int | None:
        """The id of the last message the fork keeps (None: all); refuses a point inside an unfinished turn."""
        if at_message_id is None:
            active = await self.turns.unfinished_in(origin.id)
            if active is not None:
                raise _running(active.id, active.status)
            return None
        message = await self.messages.get(at_message_id)
        if message is None or message.session_id != origin.id:
            raise RuleViolation(
                "message_not_in_session", f"Message {at_message_id} is not a message of session {origin.id}",
                session_id=str(origin.id), message_id=at_message_id,
            )  # fmt: skip
        if message.superseded_by_turn_id is not None:
            raise RuleViolation(
                "message_superseded",
                f"Message {at_message_id} belongs to a regenerated turn: fork at a message of the history",
                superseded_by_turn_id=str(message.superseded_by_turn_id),
            )
        if message.role == "tool":
            raise RuleViolation(
                "message_not_forkable",
                f"Message {at_message_id} is a tool result: fork at the assistant message that asked for it",
            )
        status = await self.turns.status_of(message.turn_id)
        if status in UNFINISHED:
            raise _running(message.turn_id, status)
        return await self.messages.batch_end(message)

    async def _carry_summary(
        self, origin: uuid.UUID, fork: uuid.UUID, kept: list[int], copies: list[int], upto: int | None
    ) -> None:
        summary = await self.summaries.latest_within(origin, upto=upto)
        if summary is None or not 0 < summary.message_count <= len(copies):
            return
        if kept[summary.message_count - 1] != summary.last_message_id:
            return  # it does not stand for the first messages of the kept history: rebuilt by a compaction
        await self.summaries.add(
            Summary(
                id=uuid.uuid4(), tenant_id=summary.tenant_id, session_id=fork, turn_id=summary.turn_id,
                first_message_id=copies[0], last_message_id=copies[summary.message_count - 1],
                message_count=summary.message_count, model_calls=summary.model_calls, content=summary.content,
                tokens=summary.tokens,
            )
        )  # fmt: skip


def _running(turn_id: uuid.UUID, status: str | None) -> Conflict:
    return Conflict(
        f"Turn {turn_id} is {status}: a fork keeps only messages of ended turns", code="turn_running",
        active_turn_id=str(turn_id),
    )  # fmt: skip
