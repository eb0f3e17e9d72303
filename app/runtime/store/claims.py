"""A run taking its turn, and what it reads to rebuild where the turn stopped.

Two claims, each one conditional UPDATE that exactly one claimant wins: a continuation takes a
`running` turn from a dead runner (or one that drained and handed it over), a resume takes an
`interrupted` turn whose decisions are all taken. Then the run is rebuilt from what is stored
(app/runtime/runs.py): this turn's messages (which loop it is at, and the reply or tool batch it
stopped in), its usage rows (the turn row's counters are only written at settle), the human
decisions taken on it, which tool events its followers may already hold.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Integer, Uuid, bindparam, case, exists, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.sql import Query, Sql, bare
from app.models import Approval, Message, PolicyDecision, TurnEvent, Usage
from app.models.base import utcnow
from app.providers.base import ChatMessage
from app.runtime.port.events import ContinueReason
from app.runtime.port.journal import HumanDecision, TurnIdentity, event_key
from app.runtime.store.quota import release_turn
from app.runtime.store.runners import Orphan
from app.runtime.store.status import CLAIMED_COLUMNS, RESUME, SEQ_BLOCK
from app.runtime.store.turns import MAX_SEQ, MESSAGE_COLUMNS, TURNS, chat_message

REPEATABLE = ("tool_call.requested", "tool_call.completed", "node.started", "node.ended")
"""Events a continuation would emit again for work the lost run had begun (see `Continued.stored_events`)."""
_turns = bare(TURNS)
_STORED = bindparam("in_stored", type_=Integer())
CLAIM = Query(
    update(_turns)
    .where(
        _turns.c.tenant_id == bindparam("in_tenant"),
        _turns.c.id == bindparam("in_turn"),
        _turns.c.status == "running",
        _turns.c.runner_id.is_not_distinct_from(bindparam("in_dead", type_=Uuid())),
    )
    .values(
        runner_id=bindparam("to_runner"),
        handed_over=False,
        updated_at=bindparam("now"),
        seq_ceiling=case((_turns.c.seq_ceiling > _STORED, _turns.c.seq_ceiling), else_=_STORED) + SEQ_BLOCK,
    )
    .returning(*CLAIMED_COLUMNS)
)
"""Take the turn from the dead runner (`in_dead`; NULL when handed over): a second claimant finds no row.

The new ceiling is one block above everything the lost run may have shown: its ceiling, or a stored
event above it (stored events are durable; `in_stored` is the max stored seq)."""
_THIS_TURN = (Message.tenant_id == bindparam("tenant_id"), Message.turn_id == bindparam("turn_id"))
TURN_MESSAGES = Query(select(*MESSAGE_COLUMNS).where(*_THIS_TURN).order_by(Message.id))
TURN_USAGE = Query(
    select(
        func.coalesce(func.sum(Usage.input_tokens), 0).label("input_tokens"),
        func.coalesce(func.sum(Usage.output_tokens), 0).label("output_tokens"),
    ).where(Usage.tenant_id == bindparam("tenant_id"), Usage.turn_id == bindparam("turn_id"))
)
REPEATABLE_EVENTS = Query(
    select(TurnEvent.type, TurnEvent.data).where(
        TurnEvent.tenant_id == bindparam("tenant_id"),
        TurnEvent.turn_id == bindparam("turn_id"),
        or_(*(TurnEvent.type == kind for kind in REPEATABLE)),
    )
)
INPUT_JUDGED = Query(
    select(
        exists().where(
            PolicyDecision.tenant_id == bindparam("tenant_id"),
            PolicyDecision.turn_id == bindparam("turn_id"),
            PolicyDecision.point == "pre_llm",
        )
    )
)
_DECIDED = select(
    Approval.id, Approval.tool_call_id, Approval.status, Approval.decision_reason, Approval.edited_arguments,
    Approval.decided_by, Approval.rule_id, Approval.result,
).where(
    Approval.tenant_id == bindparam("tenant_id"),
    Approval.turn_id == bindparam("turn_id"),
    or_(Approval.status == "approved", Approval.status == "denied"),
)  # fmt: skip
DECIDED = Query(_DECIDED.order_by(Approval.created_at))
DECIDED_IN_LOOP = Query(
    _DECIDED.where(Approval.loop == bindparam("loop", type_=Integer())).order_by(Approval.created_at)
)


@dataclass(frozen=True, slots=True)
class Claimed:
    """A turn this replica now runs: its row as claimed, and the max seq stored of it."""

    orphan: Orphan
    row: Mapping[str, Any]
    stored_seq: int

    @property
    def reason(self) -> ContinueReason:
        return "shutdown" if self.orphan.handed_over else "replica_lost"

    @property
    def session_id(self) -> uuid.UUID:
        session_id: uuid.UUID = self.row["session_id"]
        return session_id


def human_decision(approval: Mapping[str, Any]) -> HumanDecision:
    """A decided approval as the run that honours it gets it."""
    return {
        "approval_id": str(approval["id"]),
        "decision": "approve" if approval["status"] == "approved" else "deny",
        "reason": approval["decision_reason"],
        "arguments": approval["edited_arguments"],
        "decided_by": approval["decided_by"],
        "rule_id": approval["rule_id"],
        "result": approval["result"],
    }


class ClaimStore:
    def __init__(self, sql: Sql) -> None:
        self.sql = sql

    async def claim(self, orphan: Orphan, me: uuid.UUID) -> Claimed | None:
        """Take `orphan` for runner `me`; None if another replica (or a cancel) got there first.

        The quota reservations the lost run still held are given back in the same transaction: the
        continuation reserves anew for the calls it makes."""
        params = {"tenant_id": orphan.tenant_id, "turn_id": orphan.turn_id}
        async with self.sql.transaction() as tx:
            stored = int(await tx.fetchval(MAX_SEQ, params) or 0)
            row = await tx.fetchrow(
                CLAIM,
                {
                    "in_tenant": orphan.tenant_id, "in_turn": orphan.turn_id, "in_dead": orphan.runner_id,
                    "to_runner": me, "now": utcnow(), "in_stored": stored,
                },
            )  # fmt: skip
            if row is not None:
                await release_turn(tx, orphan.tenant_id, orphan.turn_id)
        return None if row is None else Claimed(orphan, row, stored)

    async def resume(
        self, tenant_id: str, turn_id: uuid.UUID, approval_id: uuid.UUID, me: uuid.UUID
    ) -> Mapping[str, Any] | None:
        """Take the interrupted turn for runner `me` (the decision `approval_id` resumes it); its row, or
        None if another decision took it first."""
        return await self.sql.fetchrow(RESUME, _resume_params(tenant_id, turn_id, approval_id, me))

    async def resume_in(
        self, db: AsyncSession, tenant_id: str, turn_id: uuid.UUID, approval_id: uuid.UUID, me: uuid.UUID
    ) -> Mapping[str, Any] | None:
        """`resume` inside the unit of work `db` that recorded the decisions (and locked the turn)."""
        found = await db.execute(RESUME.statement, _resume_params(tenant_id, turn_id, approval_id, me))
        row = found.mappings().first()
        return None if row is None else {str(k): v for k, v in row.items()}

    async def turn_messages(self, ident: TurnIdentity) -> list[ChatMessage]:
        rows = await self.sql.fetch(TURN_MESSAGES, _key(ident))
        return [chat_message(row) for row in rows]

    async def turn_usage(self, ident: TurnIdentity) -> tuple[int, int]:
        usage = await self.sql.fetchrow(TURN_USAGE, _key(ident))
        assert usage is not None
        return int(usage["input_tokens"]), int(usage["output_tokens"])

    async def decisions(self, ident: TurnIdentity, *, loop: int | None = None) -> dict[str, HumanDecision]:
        """The turn's human decisions (of one `loop`, or all) by tool_call_id (a decided call is never asked again)."""
        if loop is None:
            rows = await self.sql.fetch(DECIDED, _key(ident))
        else:
            rows = await self.sql.fetch(DECIDED_IN_LOOP, {**_key(ident), "loop": loop})
        return {row["tool_call_id"]: human_decision(row) for row in rows}

    async def stored_events(self, ident: TurnIdentity) -> frozenset[tuple[str, str]]:
        rows = await self.sql.fetch(REPEATABLE_EVENTS, _key(ident))
        return frozenset((row["type"], event_key(orjson.loads(row["data"]))) for row in rows)

    async def input_judged(self, ident: TurnIdentity) -> bool:
        return bool(await self.sql.fetchval(INPUT_JUDGED, _key(ident)))


def _resume_params(tenant_id: str, turn_id: uuid.UUID, approval_id: uuid.UUID, me: uuid.UUID) -> dict[str, Any]:
    return {"in_tenant": tenant_id, "in_turn": turn_id, "to_approval": approval_id, "to_runner": me, "now": utcnow()}


def _key(ident: TurnIdentity) -> dict[str, Any]:
    return {"tenant_id": ident.tenant_id, "turn_id": ident.turn_id}
