"""The database side of a running turn: row builders for the batched writer, and the few reads
and writes that must happen at once (history, the tool ledger, approvals, audit records).

Single-statement reads and writes run on an AUTOCOMMIT view of the engine, so they cost one
round trip instead of BEGIN, statement, COMMIT.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, func, insert, literal, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.models import (
    Approval,
    AuditRecord,
    Message,
    PolicyDecision,
    Session,
    ToolExecution,
    Turn,
    TurnEvent,
    Usage,
)
from app.models.base import utcnow
from app.providers.base import ChatMessage, ToolCall
from app.tools.base import ToolResult

MESSAGES: Table = Message.__table__  # type: ignore[assignment]
DECISIONS: Table = PolicyDecision.__table__  # type: ignore[assignment]
USAGE: Table = Usage.__table__  # type: ignore[assignment]


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


def usage_row(ident: TurnIdentity, *, model: str, input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "id": uuid.uuid4(), "tenant_id": ident.tenant_id, "session_id": ident.session_id,
        "turn_id": ident.turn_id, "agent_id": ident.agent_id, "model": model, "input_tokens": input_tokens,
        "output_tokens": output_tokens, "created_at": utcnow(),
    }  # fmt: skip


def decision_row(ident: TurnIdentity, **fields: Any) -> dict[str, Any]:
    """A receipt: point, tool_call_id, tool_name, verdict, rule_id, reason, policy_hash."""
    return {
        "id": uuid.uuid4(), "tenant_id": ident.tenant_id, "session_id": ident.session_id,
        "turn_id": ident.turn_id, "created_at": utcnow(), **fields,
    }  # fmt: skip


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


def history_statement(tenant_id: str, session_id: uuid.UUID) -> Any:
    return (
        select(Message.role, Message.content, Message.tool_calls, Message.tool_call_id, Message.name, Message.is_error)
        .where(Message.tenant_id == tenant_id, Message.session_id == session_id)
        .order_by(Message.id)
    )


async def load_history(conn: Any, tenant_id: str, session_id: uuid.UUID) -> list[ChatMessage]:
    return [chat_message(r) for r in await conn.execute(history_statement(tenant_id, session_id))]


def settle_turn(ident: TurnIdentity, values: dict[str, Any]) -> Any:
    """The settle step of a turn's last write: leave `running`, never overwriting a cancel."""

    async def settle(conn: AsyncConnection) -> bool:
        moved = await conn.execute(
            update(Turn)
            .where(Turn.id == ident.turn_id, Turn.status == "running")
            .values(**values, updated_at=utcnow())
            .returning(Turn.id)
        )
        return moved.first() is not None

    return settle


class TurnStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")

    async def history(self, tenant_id: str, session_id: uuid.UUID) -> list[ChatMessage]:
        async with self.autocommit.connect() as conn:
            return await load_history(conn, tenant_id, session_id)

    async def session_for_turn(self, tenant_id: str, session_id: uuid.UUID, owner_sub: str | None) -> Any:
        """What a new turn needs of its session (None if not visible: other tenant, or not the owner)."""
        stmt = select(
            Session.id, Session.tenant_id, Session.agent_id, Session.agent_version, Session.owner_sub,
            Session.snapshot, Session.status,
        ).where(Session.tenant_id == tenant_id, Session.id == session_id)  # fmt: skip
        if owner_sub is not None:
            stmt = stmt.where(Session.owner_sub == owner_sub)
        async with self.autocommit.connect() as conn:
            return (await conn.execute(stmt)).first()

    async def start_turn(self, turn: dict[str, Any], message: dict[str, Any]) -> list[ChatMessage]:
        """Insert a turn with its user message atomically, then read the session's history.

        On PostgreSQL the two inserts are one statement (a data-modifying CTE) with no BEGIN/COMMIT;
        elsewhere they share a transaction. The partial unique index on active turns raises
        IntegrityError for a second active turn of the session.
        """
        if self.engine.dialect.name == "postgresql":
            new_turn = insert(Turn).values(**turn).returning(Turn.id).cte("new_turn")
            columns = [c for c in message if c != "turn_id"]
            values = [literal(message[c], MESSAGES.c[c].type) for c in columns]
            both = insert(Message).from_select([*columns, "turn_id"], select(*values, new_turn.c.id))
            async with self.autocommit.connect() as conn:
                await conn.execute(both)
                return await load_history(conn, turn["tenant_id"], turn["session_id"])
        async with self.engine.begin() as conn:
            await conn.execute(insert(Turn).values(**turn))
            await conn.execute(insert(Message).values(**message))
            return await load_history(conn, turn["tenant_id"], turn["session_id"])

    async def ledger_get(self, key: str) -> ToolResult | None:
        stmt = select(ToolExecution.result, ToolExecution.is_error).where(ToolExecution.idempotency_key == key)
        async with self.autocommit.connect() as conn:
            row = (await conn.execute(stmt)).first()
        return None if row is None else ToolResult(content=row.result, is_error=row.is_error)

    async def ledger_put(
        self, ident: TurnIdentity, *, key: str, loop: int, call: ToolCall, result: ToolResult
    ) -> ToolResult:
        """Record an executed call; if the key is already recorded, the stored result wins."""
        values = {
            "id": uuid.uuid4(), "tenant_id": ident.tenant_id, "session_id": ident.session_id,
            "turn_id": ident.turn_id, "idempotency_key": key, "loop": loop, "tool_call_id": call.id,
            "tool_name": call.name, "arguments": call.arguments, "result": result.content,
            "is_error": result.is_error, "created_at": utcnow(),
        }  # fmt: skip
        dialect_insert = pg_insert if self.engine.dialect.name == "postgresql" else sqlite_insert
        stmt = dialect_insert(ToolExecution).values(**values).on_conflict_do_nothing(index_elements=["idempotency_key"])
        async with self.autocommit.connect() as conn:
            inserted = (await conn.execute(stmt)).rowcount
        if inserted:
            return result
        stored = await self.ledger_get(key)
        return stored or result

    async def record_audit(self, ident: TurnIdentity, kind: str, detail: dict[str, Any]) -> None:
        row = {"id": uuid.uuid4(), "tenant_id": ident.tenant_id, "turn_id": ident.turn_id, "kind": kind,
               "detail": detail, "created_at": utcnow()}  # fmt: skip
        async with self.autocommit.connect() as conn:
            await conn.execute(insert(AuditRecord).values(**row))

    async def create_approvals(self, rows: Sequence[dict[str, Any]]) -> None:
        async with self.autocommit.connect() as conn:
            await conn.execute(insert(Approval), list(rows))

    async def current_status(self, turn_id: uuid.UUID) -> str:
        async with self.autocommit.connect() as conn:
            return str(await conn.scalar(select(Turn.status).where(Turn.id == turn_id)))

    async def max_seq(self, turn_id: uuid.UUID) -> int:
        async with self.autocommit.connect() as conn:
            value = await conn.scalar(select(func.max(TurnEvent.seq)).where(TurnEvent.turn_id == turn_id))
        return int(value or 0)
