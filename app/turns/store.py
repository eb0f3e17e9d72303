"""Every write a running turn makes, each in a short transaction of its own (SQLAlchemy Core).

The graph and the runner reach the database only through this class, so tests and the
LangGraph nodes never hold a request's session.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncEngine

from app.models import Approval, AuditRecord, Message, PolicyDecision, Session, ToolExecution, Turn, TurnEvent, Usage
from app.models.base import utcnow
from app.providers.base import ChatMessage, ToolCall
from app.tools.base import ToolResult


@dataclass(frozen=True, slots=True)
class TurnIdentity:
    tenant_id: str
    session_id: uuid.UUID
    turn_id: uuid.UUID
    agent_id: uuid.UUID


def message_row(ident: TurnIdentity, message: ChatMessage) -> dict[str, Any]:
    return {
        "tenant_id": ident.tenant_id,
        "session_id": ident.session_id,
        "turn_id": ident.turn_id,
        "role": message.role,
        "content": message.content,
        "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls] or None,
        "tool_call_id": message.tool_call_id,
        "name": message.name,
        "is_error": message.is_error,
        "created_at": utcnow(),
    }


def chat_message(row: Any) -> ChatMessage:
    calls = tuple(ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"]) for c in row.tool_calls or ())
    return ChatMessage(
        role=row.role,
        content=row.content,
        tool_calls=calls,
        tool_call_id=row.tool_call_id,
        name=row.name,
        is_error=row.is_error,
    )


class TurnStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def history(self, tenant_id: str, session_id: uuid.UUID) -> list[ChatMessage]:
        stmt = (
            select(
                Message.role, Message.content, Message.tool_calls, Message.tool_call_id, Message.name, Message.is_error
            )
            .where(Message.tenant_id == tenant_id, Message.session_id == session_id)
            .order_by(Message.id)
        )
        async with self.engine.connect() as conn:
            return [chat_message(r) for r in await conn.execute(stmt)]

    async def append_messages(self, ident: TurnIdentity, messages: Sequence[ChatMessage]) -> None:
        if not messages:
            return
        async with self.engine.begin() as conn:
            await conn.execute(insert(Message), [message_row(ident, m) for m in messages])

    async def record_model_call(
        self, ident: TurnIdentity, assistant: ChatMessage, *, model: str, input_tokens: int, output_tokens: int
    ) -> None:
        """The assistant message (with its tool call ids) and its usage, durable before any call runs."""
        async with self.engine.begin() as conn:
            await conn.execute(insert(Message), [message_row(ident, assistant)])
            await conn.execute(
                insert(Usage).values(
                    id=uuid.uuid4(),
                    tenant_id=ident.tenant_id,
                    session_id=ident.session_id,
                    turn_id=ident.turn_id,
                    agent_id=ident.agent_id,
                    model=model,
                    input_tokens=input_tokens,
                    output_tokens=output_tokens,
                    created_at=utcnow(),
                )
            )

    async def ledger_get(self, key: str) -> ToolResult | None:
        stmt = select(ToolExecution.result, ToolExecution.is_error).where(ToolExecution.idempotency_key == key)
        async with self.engine.connect() as conn:
            row = (await conn.execute(stmt)).first()
        return None if row is None else ToolResult(content=row.result, is_error=row.is_error)

    async def ledger_put(
        self, ident: TurnIdentity, *, key: str, loop: int, call: ToolCall, result: ToolResult
    ) -> ToolResult:
        """Record an executed call; if the key is already recorded, the stored result wins."""
        values = {
            "id": uuid.uuid4(),
            "tenant_id": ident.tenant_id,
            "session_id": ident.session_id,
            "turn_id": ident.turn_id,
            "idempotency_key": key,
            "loop": loop,
            "tool_call_id": call.id,
            "tool_name": call.name,
            "arguments": call.arguments,
            "result": result.content,
            "is_error": result.is_error,
            "created_at": utcnow(),
        }
        dialect_insert = pg_insert if self.engine.dialect.name == "postgresql" else sqlite_insert
        stmt = dialect_insert(ToolExecution).values(**values).on_conflict_do_nothing(index_elements=["idempotency_key"])
        async with self.engine.begin() as conn:
            inserted = (await conn.execute(stmt)).rowcount
        if inserted:
            return result
        stored = await self.ledger_get(key)
        return stored or result

    async def record_decision(
        self,
        ident: TurnIdentity,
        *,
        point: str,
        tool_call_id: str | None,
        tool_name: str | None,
        verdict: str,
        rule_id: str | None,
        reason: str | None,
        policy_hash: str,
    ) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(
                insert(PolicyDecision).values(
                    id=uuid.uuid4(),
                    tenant_id=ident.tenant_id,
                    session_id=ident.session_id,
                    turn_id=ident.turn_id,
                    point=point,
                    tool_call_id=tool_call_id,
                    tool_name=tool_name,
                    verdict=verdict,
                    rule_id=rule_id,
                    reason=reason,
                    policy_hash=policy_hash,
                    created_at=utcnow(),
                )
            )

    async def record_audit(self, ident: TurnIdentity, kind: str, detail: dict[str, Any]) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(
                insert(AuditRecord).values(
                    id=uuid.uuid4(),
                    tenant_id=ident.tenant_id,
                    turn_id=ident.turn_id,
                    kind=kind,
                    detail=detail,
                    created_at=utcnow(),
                )
            )

    async def create_approvals(self, rows: list[dict[str, Any]]) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(insert(Approval), rows)

    async def set_loop_count(self, turn_id: uuid.UUID, loop_count: int) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(update(Turn).where(Turn.id == turn_id).values(loop_count=loop_count))

    async def finish(
        self, ident: TurnIdentity, *, from_status: str, values: dict[str, Any], model_calls: int | None
    ) -> str:
        """Move the turn out of `from_status`; returns the status it has afterwards (never overwrites)."""
        async with self.engine.begin() as conn:
            result = await conn.execute(
                update(Turn)
                .where(Turn.id == ident.turn_id, Turn.status == from_status)
                .values(**values, updated_at=utcnow())
                .returning(Turn.status)
            )
            row = result.first()
            if row is not None and model_calls is not None:
                await conn.execute(
                    update(Session).where(Session.id == ident.session_id).values(model_calls=model_calls)
                )
            if row is not None:
                return str(row.status)
            current = await conn.execute(select(Turn.status).where(Turn.id == ident.turn_id))
            return str(current.scalar_one())

    async def max_seq(self, turn_id: uuid.UUID) -> int:
        async with self.engine.connect() as conn:
            value = await conn.scalar(select(func.max(TurnEvent.seq)).where(TurnEvent.turn_id == turn_id))
        return int(value or 0)
