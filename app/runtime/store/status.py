"""A turn's status: every statement that changes it, and nothing else.

```
 start_turn ─▶ running ──settle──▶ completed · failed · cancelled · interrupted · …
   enqueue ─▶ queued ──promote──▶ running
              queued ──cancel──▶ cancelled
         interrupted ──resume──▶ running
 running/interrupted ──end_unowned──▶ ended (a crash, a cancel: no task of this process runs it)
```

A new turn is inserted `running` (app/runtime/store/turns.py: `start_turn`) or `queued`
(app/runtime/store/queue.py: `enqueue`); a continuation's claim (app/runtime/store/claims.py: `CLAIM`)
moves a `running` turn to another runner and leaves its status alone. Every UPDATE here names the
status it leaves in its WHERE, so each transition happens once however many runners race for it.
UPDATE parameters are named `in_*`/`to_*`: SQLAlchemy reserves column names for SET values.
"""

from __future__ import annotations

import uuid
from functools import lru_cache
from typing import Any

from sqlalchemy import Table, Uuid, bindparam, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql.dml import Update

from app.core.sql import AlchemySql, Query, bare
from app.models import Approval, Turn, TurnEvent
from app.models.base import utcnow
from app.runtime.port.events import EndStatus, TurnEnded, stamp
from app.runtime.store.admission import free_slot
from app.runtime.store.notify import notify_followers
from app.runtime.store.outbox import enqueue_in_transaction
from app.runtime.store.quota import release_turn

TURNS: Table = Turn.__table__  # type: ignore[assignment]
_turns = bare(TURNS)
SEQ_BLOCK = 512
"""Event ids a turn reserves at a time (`turns.seq_ceiling`): one write in about 256 events carries a raise."""
RUN_COLUMNS = (
    "input", "owner_sub", "max_loops", "max_output_tokens", "max_total_tokens", "mode", "max_steps", "output_schema",
    "attachments",
)  # fmt: skip
"""What a turn's row gives the run that starts it later (a queued turn's promote, a continuation's claim)."""
CLAIMED_COLUMNS = (_turns.c.id, _turns.c.session_id, _turns.c.seq_ceiling, *(_turns.c[c] for c in RUN_COLUMNS))
"""What a run that takes its turn reads back from the row it changed."""

OLDEST_QUEUED = (
    select(Turn.id)
    .where(
        Turn.tenant_id == bindparam("in_tenant"),
        Turn.session_id == bindparam("in_session"),
        Turn.status == "queued",
    )
    .order_by(Turn.created_at, Turn.id)
    .limit(1)
    .scalar_subquery()
)
_PROMOTE = (
    update(_turns)
    .where(_turns.c.tenant_id == bindparam("in_tenant"), _turns.c.id == OLDEST_QUEUED, _turns.c.status == "queued")
    .values(status="running", runner_id=bindparam("to_runner"), updated_at=bindparam("now"), seq_ceiling=SEQ_BLOCK)
    .returning(_turns.c.id, _turns.c.seq_ceiling, *(_turns.c[c] for c in RUN_COLUMNS))
)
PROMOTE = Query(_PROMOTE)
_free = select(free_slot(TURNS, "in_tenant").c.slot)
SLOTTED_PROMOTE = Query(_PROMOTE.values(concurrency_slot=_free.scalar_subquery()).where(_free.exists()))
"""The promote of a tenant with `max_concurrent_turns`: the turn takes a free slot, or stays queued."""

CANCEL_ONE = Query(
    update(_turns)
    .where(
        _turns.c.tenant_id == bindparam("in_tenant"), _turns.c.id == bindparam("in_turn"), _turns.c.status == "queued"
    )
    .values(status="cancelled", updated_at=bindparam("now"), ended_at=bindparam("now"))
)

CANCEL_QUEUED = Query(
    update(_turns)
    .where(
        _turns.c.tenant_id == bindparam("in_tenant"),
        _turns.c.session_id == bindparam("in_session"),
        _turns.c.status == "queued",
    )
    .values(status="cancelled", updated_at=bindparam("now"), ended_at=bindparam("now"))
    .returning(_turns.c.id)
)

RESUME = Query(
    update(_turns)
    .where(
        _turns.c.tenant_id == bindparam("in_tenant"),
        _turns.c.id == bindparam("in_turn"),
        _turns.c.status == "interrupted",
    )
    .values(  # a resume is never refused for concurrency: it holds no slot (app/runtime/store/admission.py)
        status="running",
        resumed_by=bindparam("to_approval", type_=Uuid()),
        runner_id=bindparam("to_runner"),
        updated_at=bindparam("now"),
        concurrency_slot=None,
        seq_ceiling=_turns.c.last_seq + SEQ_BLOCK,
    )
    .returning(
        *CLAIMED_COLUMNS,
        _turns.c.last_seq,
        _turns.c.loop_count,
        _turns.c.input_tokens,
        _turns.c.output_tokens,
        _turns.c.resumed_by,
    )  # fmt: skip
)
"""Move an interrupted turn back to `running` for this runner; no row if another decision did first."""


def settle_turn_update(columns: tuple[str, ...], fence: Any = None) -> Update:
    """A run's outcome on its `running` turn, only while the run still owns it (its runner, or the write's fence)."""
    turns = bare(TURNS)
    runner = bindparam("settle_runner", type_=Uuid())
    owned = turns.c.runner_id == runner if fence is None else turns.c.id.in_(select(fence.c.id))
    return (
        update(turns)
        .where(
            turns.c.id == bindparam("settle_turn_id"),
            turns.c.status == "running",
            or_(runner.is_(None), owned),
        )
        .values({c: bindparam(f"s_{c}") for c in columns})
        .returning(turns.c.id)
    )


@lru_cache(maxsize=16)
def settle_query(columns: tuple[str, ...]) -> Query:
    return Query(settle_turn_update(columns))


async def end_unowned_turn(
    engine: AsyncEngine, tenant_id: str, turn_id: uuid.UUID, *, status: EndStatus, error: dict[str, str] | None
) -> bool:
    """End a running or interrupted turn that no task of this process runs (a crash, a cancel).

    Its pending approvals expire with it: a turn that has ended can no longer resume, and the quota
    reservations of a model call its lost run was in are given back. A turn that
    was `running` may have shown events its dead run never stored, up to its `seq_ceiling`, so its
    closing event comes after the ceiling: sequence numbers are never reused, even after a crash.
    False if the turn had already ended.
    """
    async with engine.begin() as conn:
        this_turn = (Turn.tenant_id == tenant_id, Turn.id == turn_id)
        before = (await conn.execute(select(Turn.status, Turn.seq_ceiling).where(*this_turn).with_for_update())).first()
        if before is None or before.status not in ("running", "interrupted"):
            return False
        last = await conn.scalar(
            select(func.max(TurnEvent.seq)).where(TurnEvent.tenant_id == tenant_id, TurnEvent.turn_id == turn_id)
        )
        seq = max(int(last or 0), before.seq_ceiling if before.status == "running" else 0) + 1
        await release_turn(AlchemySql(engine, conn), tenant_id, turn_id)
        row = (
            await conn.execute(
                update(Turn)
                .where(*this_turn)
                .values(status=status, error=error, ended_at=utcnow(), updated_at=utcnow(), last_seq=seq)
                .returning(Turn.final_output, Turn.input_tokens, Turn.output_tokens, Turn.loop_count)
            )
        ).one()
        ended = TurnEnded.of(
            status,
            final_output=row.final_output,
            input_tokens=row.input_tokens,
            output_tokens=row.output_tokens,
            loop_count=row.loop_count,
            error=error,
        )
        event = {
            "turn_id": turn_id,
            "seq": seq,
            "tenant_id": tenant_id,
            "type": ended.type,
            "data": stamp(str(turn_id), seq, ended),
            "created_at": utcnow(),
        }
        await conn.execute(insert(TurnEvent).values(event))
        await enqueue_in_transaction(AlchemySql(engine, conn), [event])
        await conn.execute(
            update(Approval)
            .where(Approval.tenant_id == tenant_id, Approval.turn_id == turn_id, Approval.status == "pending")
            .values(status="expired")
        )
        if conn.dialect.name == "postgresql":
            await notify_followers(conn, turn_id)
    return True
