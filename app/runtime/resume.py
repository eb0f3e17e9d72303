"""Rebuild a turn's run from the database, to continue it exactly at the batch it stopped in."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from app.governance.limits import Ceilings
from app.models import Session, TenantLimits, Turn
from app.runtime.journal import HumanDecision, TurnIdentity, TurnRun
from app.runtime.quota import token_quota_of
from app.runtime.store import TurnStore


async def resume_run(
    db: AsyncSession, store: TurnStore, turn: Turn, approval_id: uuid.UUID, decisions: dict[str, HumanDecision]
) -> TurnRun:
    session = await db.get(Session, turn.session_id)
    assert session is not None
    history = await store.history(turn.tenant_id, turn.session_id)
    assistant = next(m for m in reversed(history) if m.role == "assistant")
    last_seq = max(turn.last_seq, await store.max_seq(turn.tenant_id, turn.id))
    return TurnRun(
        ident=TurnIdentity(turn.tenant_id, turn.session_id, turn.id, session.agent_id),
        agent_version=session.agent_version,
        owner_sub=turn.owner_sub,
        snapshot=session.snapshot,
        input=turn.input,
        max_loops=turn.max_loops,
        max_output_tokens=turn.max_output_tokens,
        max_total_tokens=turn.max_total_tokens,
        token_quota=token_quota_of(Ceilings.of(_columns(await db.get(TenantLimits, turn.tenant_id)))),
        last_seq=last_seq,
        loop_count=turn.loop_count,
        input_tokens=turn.input_tokens,
        output_tokens=turn.output_tokens,
        resumed_by=approval_id,
        decisions=decisions,
        history=history,
        pending=list(assistant.tool_calls),
        last_text=assistant.content,
    )


def _columns(row: TenantLimits | None) -> dict[str, object] | None:
    return None if row is None else {c: getattr(row, c) for c in Ceilings.__dataclass_fields__}
