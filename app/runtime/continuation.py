"""Continue a `running` turn whose run was lost (its replica died, or a draining one handed it over).

One replica claims the turn (one conditional UPDATE: exactly one wins), then rebuilds its run from
what is stored — the session's history, this turn's messages (which loop it is at, and the reply or
tool batch it stopped in), its usage rows (the turn row's counters are only written at settle), the
human decisions taken on it, an autonomous turn's plan events, which tool events its followers may
already hold — and launches it here. The runtime picks up at the last stored step (app/graph/runtime.py).
Event ids go on above everything the lost run may have shown (`turns.seq_ceiling`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Integer, Uuid, bindparam, case, exists, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from app.core.sql import Query, Sql, bare
from app.models import Approval, Message, PolicyDecision, TurnEvent, Usage
from app.models.base import utcnow
from app.providers.base import ChatMessage
from app.runtime.lease import Orphan
from app.runtime.port.events import ContinueReason
from app.runtime.port.journal import Continued, HumanDecision, TurnIdentity, TurnRun, event_key
from app.runtime.resume import human_decision
from app.runtime.store.admission import Admission
from app.runtime.store.quota import token_quota_of
from app.runtime.store.turns import RUN_COLUMNS, TURNS, TurnStore, chat_message
from app.runtime.stream import SEQ_BLOCK

REPEATABLE = ("tool_call.requested", "tool_call.completed", "node.started", "node.ended")
"""Events a continuation would emit again for work the lost run had begun (see `Continued.stored_events`)."""
_turns = bare(TURNS)
_STORED = bindparam("in_stored", type_=Integer())
MAX_SEQ = Query(
    select(func.max(TurnEvent.seq)).where(
        TurnEvent.tenant_id == bindparam("tenant_id"), TurnEvent.turn_id == bindparam("turn_id")
    )
)
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
    .returning(_turns.c.session_id, _turns.c.seq_ceiling, *(_turns.c[c] for c in RUN_COLUMNS))
)
"""Take the turn from the dead runner (`in_dead`; NULL when handed over): a second claimant finds no row.

The new ceiling is one block above everything the lost run may have shown: its ceiling, or a stored
event above it (stored events are durable; `in_stored` is the max stored seq)."""
TURN_MESSAGES = Query(
    select(Message.role, Message.content, Message.tool_calls, Message.tool_call_id, Message.name, Message.is_error)
    .where(Message.tenant_id == bindparam("tenant_id"), Message.turn_id == bindparam("turn_id"))
    .order_by(Message.id)
)
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


async def claim(sql: Sql, orphan: Orphan, me: uuid.UUID) -> Claimed | None:
    """Take `orphan` for runner `me`; None if another replica (or a cancel) got there first."""
    params = {"tenant_id": orphan.tenant_id, "turn_id": orphan.turn_id}
    async with sql.transaction() as tx:
        stored = int(await tx.fetchval(MAX_SEQ, params) or 0)
        row = await tx.fetchrow(
            CLAIM,
            {
                "in_tenant": orphan.tenant_id, "in_turn": orphan.turn_id, "in_dead": orphan.runner_id,
                "to_runner": me, "now": utcnow(), "in_stored": stored,
            },
        )  # fmt: skip
    return None if row is None else Claimed(orphan, row, stored)


def loops_done(messages: Sequence[ChatMessage]) -> int:
    """Loops the turn completed: model replies with tool calls whose every result is stored."""
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    return sum(
        1 for m in messages if m.role == "assistant" and m.tool_calls and all(c.id in answered for c in m.tool_calls)
    )


async def continued_run(store: TurnStore, engine: AsyncEngine, claimed: Claimed, session: Mapping[str, Any]) -> TurnRun:
    """The run that continues a claimed turn, from what is stored (`session` as `session_for_turn` reads it)."""
    row, sql = claimed.row, store.sql
    ident = TurnIdentity(claimed.orphan.tenant_id, claimed.session_id, claimed.orphan.turn_id, session["agent_id"])
    params = {"tenant_id": ident.tenant_id, "turn_id": ident.turn_id}
    messages = [chat_message(m) for m in await sql.fetch(TURN_MESSAGES, params)]
    usage = await sql.fetchrow(TURN_USAGE, params)
    assert usage is not None
    last = messages[-1] if messages else None
    stopped_at = last if last is not None and last.role == "assistant" else None
    ceiling = int(row["seq_ceiling"])
    return TurnRun(
        ident=ident,
        agent_version=session["agent_version"],
        owner_sub=row["owner_sub"],
        snapshot=session["snapshot"],
        input=row["input"],
        history=await store.history(ident.tenant_id, ident.session_id),
        max_loops=row["max_loops"],
        max_output_tokens=row["max_output_tokens"],
        max_total_tokens=row["max_total_tokens"],
        token_quota=token_quota_of(Admission.of(session).ceilings),
        last_seq=ceiling - SEQ_BLOCK,
        seq_ceiling=ceiling,
        loop_count=loops_done(messages),
        input_tokens=int(usage["input_tokens"]),
        output_tokens=int(usage["output_tokens"]),
        decisions=await decisions_of(engine, ident),
        pending=list(stopped_at.tool_calls) if stopped_at is not None else [],
        last_text=stopped_at.content if stopped_at is not None else "",
        mode=row["mode"],
        max_steps=row["max_steps"] or 0,
        plan_events=await store.plan_events(ident.tenant_id, ident.turn_id) if row["mode"] == "autonomous" else [],
        continued=Continued(
            claimed.reason,
            claimed.stored_seq,
            stored_events=await stored_events(sql, ident),
            input_judged=bool(await sql.fetchval(INPUT_JUDGED, params)),
        ),
    )


async def decisions_of(engine: AsyncEngine, ident: TurnIdentity) -> dict[str, HumanDecision]:
    """The turn's human decisions by tool_call_id (a decided call is never asked about again)."""
    decided = select(Approval).where(
        Approval.tenant_id == ident.tenant_id,
        Approval.turn_id == ident.turn_id,
        or_(Approval.status == "approved", Approval.status == "denied"),
    )
    async with AsyncSession(engine) as db:
        return {approval.tool_call_id: human_decision(approval) for approval in await db.scalars(decided)}


async def stored_events(sql: Sql, ident: TurnIdentity) -> frozenset[tuple[str, str]]:
    rows = await sql.fetch(REPEATABLE_EVENTS, {"tenant_id": ident.tenant_id, "turn_id": ident.turn_id})
    return frozenset((row["type"], event_key(orjson.loads(row["data"]))) for row in rows)
