"""The database side of a running turn: row builders for the batched writer, and the few reads
and writes that must happen at once (history, the tool ledger, approvals, audit records).

Every statement here is a hot-path `Query` (app/core/sql.py): raw asyncpg on PostgreSQL, one round
trip per single statement (autocommit), SQLAlchemy on SQLite.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import asyncpg
import orjson
from sqlalchemy import Integer, String, Table, bindparam, delete, func, insert, literal, or_, select, union_all, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.sql.dml import Delete, Update

from app.core.sql import Query, Row, Sql, bare, insert_rows
from app.governance.policy import Decision, arguments_hash
from app.models import (
    Approval,
    AuditRecord,
    Message,
    PolicyDecision,
    Session,
    Summary,
    ToolExecution,
    Turn,
    TurnEvent,
    Usage,
)
from app.models.base import utcnow
from app.models.turn import ACTIVE_STATUSES
from app.providers.base import Attachment, ChatMessage, ToolCall
from app.runtime.port.events import PLAN_EVENTS_LIKE, LoggedEvent
from app.runtime.port.journal import ApprovalRequest, ModelUsage, TurnIdentity
from app.runtime.store.admission import (
    SLOT_ATTEMPTS,
    SLOT_INDEX,
    NoFreeSlot,
    admission_params,
    slot_params,
    slotted_turn_insert,
    with_tenant_admission,
)
from app.runtime.store.batch import LEDGER, Settle
from app.runtime.store.read_ahead import KEY_COLUMNS, TENANT_RULES
from app.tools.base import ToolResult

MESSAGES: Table = Message.__table__  # type: ignore[assignment]
DECISIONS: Table = PolicyDecision.__table__  # type: ignore[assignment]
USAGE: Table = Usage.__table__  # type: ignore[assignment]
TURNS: Table = Turn.__table__  # type: ignore[assignment]
SESSIONS: Table = Session.__table__  # type: ignore[assignment]
SUMMARIES: Table = Summary.__table__  # type: ignore[assignment]
DISPATCHED, COMPLETED = "dispatched", "completed"
APPROVALS: Table = Approval.__table__  # type: ignore[assignment]
AUDIT: Table = AuditRecord.__table__  # type: ignore[assignment]


def message_row(ident: TurnIdentity, message: ChatMessage) -> dict[str, Any]:
    return {
        "tenant_id": ident.tenant_id,
        "session_id": ident.session_id,
        "turn_id": ident.turn_id,
        "role": message.role,
        "content": message.content,
        "tool_calls": [stored_call(c) for c in message.tool_calls] or None,
        "tool_call_id": message.tool_call_id,
        "name": message.name,
        "is_error": message.is_error,
        "attachments": [dataclasses.asdict(a) for a in message.attachments] or None,
        "created_at": utcnow(),
    }


def stored_call(call: ToolCall) -> dict[str, Any]:
    """A tool call as its message stores it: our id, and the provider's beside it when it differs."""
    stored = {"id": call.id, "name": call.name, "arguments": call.arguments}
    return stored if call.provider_id is None else {**stored, "provider_id": call.provider_id}


def usage_row(ident: TurnIdentity, usage: ModelUsage) -> dict[str, Any]:
    """A ledger row: `dispatched` (no result yet) or `completed`."""
    return {
        "id": uuid.uuid4(), "tenant_id": ident.tenant_id, "session_id": ident.session_id,
        "turn_id": ident.turn_id, "agent_id": ident.agent_id, "model": usage.model,
        "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "kind": usage.kind,
        "created_at": utcnow(),
    }  # fmt: skip


def decision_row(
    ident: TurnIdentity, decision: Decision, *, tool_call_id: str | None, tool_name: str | None
) -> dict[str, Any]:
    """A receipt of `decision`, with the hash of the policy set that made it."""
    return {
        "id": uuid.uuid4(), "tenant_id": ident.tenant_id, "session_id": ident.session_id,
        "turn_id": ident.turn_id, "created_at": utcnow(), "point": decision.point, "tool_call_id": tool_call_id,
        "tool_name": tool_name, "verdict": decision.verdict, "rule_id": decision.rule_id,
        "reason": decision.reason, "policy_hash": decision.policy_hash, "decided_by": decision.decided_by,
        "arguments_sha256": decision.arguments_sha256, "edited_arguments_sha256": decision.edited_arguments_sha256,
        "detector": decision.detector, "match_count": decision.match_count,
    }  # fmt: skip


def approval_row(ident: TurnIdentity, owner_sub: str, request: ApprovalRequest) -> dict[str, Any]:
    call, decision = request.call, request.decision
    return {
        "id": uuid.uuid4(), "tenant_id": ident.tenant_id, "session_id": ident.session_id,
        "turn_id": ident.turn_id, "owner_sub": owner_sub, "loop": request.loop, "tool_call_id": call.id,
        "tool_name": call.name, "arguments": call.arguments, "arguments_hash": arguments_hash(call.arguments),
        "reason": decision.reason, "rule_id": decision.rule_id, "status": "pending", "created_at": utcnow(),
        "result": request.result,
    }  # fmt: skip


def chat_message(row: Mapping[str, Any]) -> ChatMessage:
    calls = tuple(
        ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"], provider_id=c.get("provider_id"))
        for c in row["tool_calls"] or ()
    )
    return ChatMessage(
        role=row["role"],
        content=row["content"],
        tool_calls=calls,
        tool_call_id=row["tool_call_id"],
        name=row["name"],
        is_error=row["is_error"],
        attachments=tuple(Attachment(**a) for a in row["attachments"] or ()),
    )


MESSAGE_COLUMNS = (
    Message.role, Message.content, Message.tool_calls, Message.tool_call_id, Message.name, Message.is_error,
    Message.attachments,
)  # fmt: skip
"""What `chat_message` reads back."""
HISTORY = Query(
    select(*MESSAGE_COLUMNS)
    .where(
        Message.tenant_id == bindparam("tenant_id"),
        Message.session_id == bindparam("session_id"),
        Message.superseded_by_turn_id.is_(None),
    )
    .order_by(Message.id)
)
"""The conversation a prompt is built from: every message but those a regenerated turn put aside."""
_SESSION_FOR_TURN = with_tenant_admission(select(
    Session.id, Session.tenant_id, Session.agent_id, Session.agent_version, Session.owner_sub, Session.snapshot,
    Session.status, Session.last_active_at, TENANT_RULES,
).where(Session.tenant_id == bindparam("tenant_id"), Session.id == bindparam("session_id")))  # fmt: skip
_WITH_KEYS = {"postgresql": _SESSION_FOR_TURN.add_columns(*KEY_COLUMNS), "sqlite": _SESSION_FOR_TURN}
SESSION_FOR_TURN = {dialect: Query(read) for dialect, read in _WITH_KEYS.items()}
OWN_SESSION_FOR_TURN = {
    dialect: Query(read.where(Session.owner_sub == bindparam("owner_sub"))) for dialect, read in _WITH_KEYS.items()
}
"""What a run needs of its session, and what its start would read next anyway (app/runtime/store/read_ahead.py)."""
LEDGER_GET = Query(
    select(ToolExecution.result, ToolExecution.is_error).where(
        ToolExecution.tenant_id == bindparam("tenant_id"),
        ToolExecution.idempotency_key == bindparam("key"),
        ToolExecution.status == COMPLETED,
    )
)
LEDGER_DISPATCHED = Query(
    select(ToolExecution.arguments).where(
        ToolExecution.tenant_id == bindparam("tenant_id"),
        ToolExecution.idempotency_key == bindparam("key"),
        ToolExecution.status == DISPATCHED,
    )
)
LEDGER_COLUMNS = (
    "id", "tenant_id", "session_id", "turn_id", "idempotency_key", "loop", "tool_call_id", "tool_name",
    "arguments", "status", "result", "is_error", "created_at",
)  # fmt: skip
_DIALECT_INSERTS = (("postgresql", pg_insert), ("sqlite", sqlite_insert))
LEDGER_PUT = {
    name: Query(
        (
            statement := dialect_insert(bare(LEDGER)).values({c: bindparam(c) for c in LEDGER_COLUMNS})
        ).on_conflict_do_update(
            index_elements=["idempotency_key"],
            set_={"status": COMPLETED, "result": statement.excluded.result, "is_error": statement.excluded.is_error},
            where=bare(LEDGER).c.status == DISPATCHED,
        )
    )
    for name, dialect_insert in _DIALECT_INSERTS
}
"""A `completed` row: new, or completing the key's `dispatched` row; a completed row is never replaced."""
CURRENT_STATUS = Query(
    select(Turn.status).where(Turn.tenant_id == bindparam("tenant_id"), Turn.id == bindparam("turn_id"))
)
PENDING_APPROVALS = Query(
    select(Approval.id, Approval.tool_call_id).where(
        Approval.tenant_id == bindparam("tenant_id"),
        Approval.turn_id == bindparam("turn_id"),
        Approval.status == "pending",
    )
)
MAX_SEQ = Query(
    select(func.max(TurnEvent.seq)).where(
        TurnEvent.tenant_id == bindparam("tenant_id"), TurnEvent.turn_id == bindparam("turn_id")
    )
)

TURN_PROGRESS = Query(
    select(Turn.status, Turn.last_seq).where(Turn.tenant_id == bindparam("tenant_id"), Turn.id == bindparam("turn_id"))
)
EVENTS_AFTER = Query(
    select(TurnEvent.seq, TurnEvent.type, TurnEvent.data)
    .where(
        TurnEvent.tenant_id == bindparam("tenant_id"),
        TurnEvent.turn_id == bindparam("turn_id"),
        TurnEvent.seq > bindparam("after", type_=Integer()),
    )
    .order_by(TurnEvent.seq)
    .limit(bindparam("limit", type_=Integer()))
)
_approvals = bare(APPROVALS)
EXPIRE_PENDING = Query(
    update(_approvals)
    .where(
        _approvals.c.tenant_id == bindparam("in_tenant"),
        _approvals.c.turn_id == bindparam("in_turn"),
        _approvals.c.status == "pending",
    )
    .values(status="expired")
)
"""The approvals of a turn that ended without their decisions can no longer be decided."""
_messages = bare(MESSAGES)
DELETE_MESSAGES = Query(
    delete(_messages).where(
        _messages.c.tenant_id == bindparam("tenant_id"), _messages.c.turn_id == bindparam("turn_id")
    )
)
"""A rolled-back turn's messages leave its session's history (its events, receipts and usage stay)."""

PLAN_EVENTS = Query(
    select(TurnEvent.data)
    .where(
        TurnEvent.tenant_id == bindparam("tenant_id"),
        TurnEvent.turn_id == bindparam("turn_id"),
        TurnEvent.type.like(PLAN_EVENTS_LIKE),
    )
    .order_by(TurnEvent.seq)
)


@lru_cache(maxsize=8)
def start_turn_query(turn_columns: tuple[str, ...], message_columns: tuple[str, ...], slotted: bool) -> Query:
    """PostgreSQL: the turn, its user message and the session's `last_active_at` in one statement
    (data-modifying CTEs) that returns the conversation the turn starts from; a turn that regenerates
    another (`supersedes_turn_id`) puts that turn's messages aside and drops its summaries in the same
    statement, only if the new turn was stored.

    Message parameters are prefixed `m_`; the message takes the new turn's id. `slotted`: the turn
    takes a free concurrency slot, or nothing is inserted and no row comes back
    (app/runtime/store/admission.py).

    The rows are the session's history as the statement's snapshot saw it, then the new message
    (sub-statements do not see each other's rows). The new message's row says `stale` when that
    snapshot still saw another active turn of the session: it ended between the snapshot and the
    insert (the one-active-turn index reads the newest rows), so its last messages may be missing and
    the history is read again (`TurnStore.start_turn`).
    """
    turns, messages = bare(TURNS), bare(MESSAGES)
    turn_insert = (
        slotted_turn_insert(TURNS, turn_columns)
        if slotted
        else insert(turns).values({c: bindparam(c) for c in turn_columns})
    )
    new_turn = turn_insert.returning(turns.c.id).cte("new_turn")
    columns = [c for c in message_columns if c != "turn_id"]
    values = [bindparam(f"m_{c}", type_=messages.c[c].type) for c in columns]
    touched = _TOUCH_SESSION.statement.cte("touched")  # type: ignore[attr-defined]
    read = [messages.c.id, *(messages.c[c.key] for c in MESSAGE_COLUMNS)]
    new_message = (
        insert(messages).from_select([*columns, "turn_id"], select(*values, new_turn.c.id)).returning(*read)
    ).cte("new_message")
    ctes = [touched, new_message]
    conversation = [
        messages.c.tenant_id == bindparam("tenant_id"),
        messages.c.session_id == bindparam("session_id"),
        messages.c.superseded_by_turn_id.is_(None),
        select(new_message.c.id).exists(),
    ]
    if "supersedes_turn_id" in turn_columns:
        stored = select(new_turn.c.id).exists()
        ctes += [_supersede_messages().where(stored).cte("put_aside"), _drop_summaries().where(stored).cte("dropped")]
        conversation.append(messages.c.turn_id.is_distinct_from(bindparam("s_old")))
    other_active = (
        select(turns.c.id)
        .where(
            turns.c.tenant_id == bindparam("tenant_id"),
            turns.c.session_id == bindparam("session_id"),
            or_(*(turns.c.status == status for status in ACTIVE_STATUSES)),
            turns.c.id != bindparam("id"),
        )
        .exists()
    )
    history = select(*read, literal(False).label("stale")).where(*conversation)
    started = select(*new_message.c, other_active.label("stale"))
    everything = union_all(history, started).subquery("conversation")
    return Query(select(everything).add_cte(*ctes).order_by(everything.c.id))


def _supersede_messages() -> Update:
    table = bare(MESSAGES)
    return (
        update(table)
        .where(
            table.c.tenant_id == bindparam("s_tenant"),
            table.c.session_id == bindparam("s_session"),
            table.c.turn_id == bindparam("s_old"),
            table.c.superseded_by_turn_id.is_(None),
        )
        .values(superseded_by_turn_id=bindparam("s_new"))
    )


def _drop_summaries() -> Delete:
    """A summary the regenerated turn made covers messages now put aside: the next compaction rebuilds it."""
    table = bare(SUMMARIES)
    return delete(table).where(
        table.c.tenant_id == bindparam("s_tenant"),
        table.c.session_id == bindparam("s_session"),
        table.c.turn_id == bindparam("s_old"),
    )


_SUPERSEDE = Query(_supersede_messages())
_DROP_SUMMARIES = Query(_drop_summaries())
TITLE_CHARS = 80
_TOUCH_SESSION = Query(
    update(bare(SESSIONS))
    .where(bare(SESSIONS).c.id == bindparam("touched_session"))
    .values(
        last_active_at=bindparam("touched_at"),
        title=func.coalesce(bare(SESSIONS).c.title, bindparam("touched_title", type_=String)),
    )
)
"""A turn starting is the session's activity (the idle sweep reads `last_active_at`); the first one
names an untitled session."""


def _touch(turn: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "touched_session": turn["session_id"],
        "touched_at": turn["created_at"],
        "touched_title": title_of(turn["input"]),
    }


def title_of(text: str) -> str | None:
    """A session's default title: the first line of its first message, cut at a word near TITLE_CHARS."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    if len(line) <= TITLE_CHARS:
        return line or None
    cut = line[:TITLE_CHARS].rsplit(" ", 1)[0] or line[:TITLE_CHARS]
    return f"{cut}…"


def _superseding(turn: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters of `_supersede_messages` and `_drop_summaries` for a turn that regenerates another."""
    if "supersedes_turn_id" not in turn:
        return {}
    return {"s_tenant": turn["tenant_id"], "s_session": turn["session_id"], "s_old": turn["supersedes_turn_id"],
            "s_new": turn["id"]}  # fmt: skip


@lru_cache(maxsize=8)
def slotted_query(turn_columns: tuple[str, ...]) -> Query:
    """(SQLite reports no row count for a statement that starts with WITH: RETURNING tells.)"""
    return Query(slotted_turn_insert(TURNS, turn_columns).returning(bare(TURNS).c.id))


def release_turn(ident: TurnIdentity) -> Settle:
    """A hand-over: the turn stays `running` with no runner, marked for any replica to continue at once."""
    return Settle(ident.turn_id, {"runner_id": None, "handed_over": True, "updated_at": utcnow()})


def settle_turn(ident: TurnIdentity, values: dict[str, Any]) -> Settle:
    """The settle step of a turn's last write: leave `running`, never overwriting a cancel."""
    return Settle(ident.turn_id, {**values, "updated_at": utcnow()})


class TurnStore:
    def __init__(self, sql: Sql) -> None:
        self.sql = sql

    async def history(self, tenant_id: str, session_id: uuid.UUID) -> list[ChatMessage]:
        return await load_history(self.sql, tenant_id, session_id)

    async def session_for_turn(
        self, tenant_id: str, session_id: uuid.UUID, owner_sub: str | None
    ) -> Mapping[str, Any] | None:
        """What a new turn needs of its session and tenant (None if not visible: other tenant, or not
        the owner): the session, the tenant's ceilings and its quota usage (app/runtime/store/admission.py)."""
        params = {"tenant_id": tenant_id, "session_id": session_id, **admission_params(utcnow())}
        if owner_sub is None:
            return await self.sql.fetchrow(SESSION_FOR_TURN[self.sql.dialect], params)
        return await self.sql.fetchrow(OWN_SESSION_FOR_TURN[self.sql.dialect], {**params, "owner_sub": owner_sub})

    async def start_turn(
        self, turn: dict[str, Any], message: dict[str, Any], *, max_concurrent: int | None = None
    ) -> list[ChatMessage]:
        """Insert a turn with its user message atomically; the session's history, the message last.

        On PostgreSQL the inserts and the history are one statement with no BEGIN/COMMIT
        (`start_turn_query`); elsewhere the inserts share a transaction and the history is read after.
        The partial unique index on active turns rejects a second active turn of the session: one of
        `app.core.sql.INTEGRITY_ERRORS` is raised. With `max_concurrent`, the turn takes one of the
        tenant's concurrency slots; `NoFreeSlot` if none is free (nothing stored).
        """
        slotted = max_concurrent is not None
        slots = slot_params(max_concurrent) if max_concurrent is not None else {}
        rows: list[Row] = []
        if self.sql.dialect == "postgresql":
            query = start_turn_query(tuple(turn), tuple(message), slotted)
            params = {**turn, **{f"m_{c}": v for c, v in message.items()}, **_touch(turn), **_superseding(turn)}
            for attempt in range(SLOT_ATTEMPTS):
                try:
                    if not (rows := await self.sql.fetch(query, {**params, **slots})):
                        raise NoFreeSlot(max_concurrent)
                    break
                except asyncpg.UniqueViolationError as exc:
                    if exc.constraint_name != SLOT_INDEX or max_concurrent is None:
                        raise
                    if attempt == SLOT_ATTEMPTS - 1:
                        raise NoFreeSlot(max_concurrent) from exc
                    slots = slot_params(max_concurrent)  # another replica took the same slot first: pick again
        else:
            async with self.sql.transaction() as tx:
                if not slotted:
                    await insert_rows(tx, TURNS, [turn])
                elif await tx.fetchrow(slotted_query(tuple(turn)), {**turn, **slots}) is None:
                    raise NoFreeSlot(max_concurrent)
                await insert_rows(tx, MESSAGES, [message])
                await tx.execute(_TOUCH_SESSION, _touch(turn))
                if superseding := _superseding(turn):
                    await tx.execute(_SUPERSEDE, superseding)
                    await tx.execute(_DROP_SUMMARIES, superseding)
        if rows and not rows[-1]["stale"]:
            return [chat_message(row) for row in rows]
        return await load_history(self.sql, turn["tenant_id"], turn["session_id"])

    async def ledger_get(self, tenant_id: str, key: str) -> ToolResult | None:
        row = await self.sql.fetchrow(LEDGER_GET, {"tenant_id": tenant_id, "key": key})
        return None if row is None else ToolResult(content=row["result"], is_error=row["is_error"])

    async def ledger_dispatched(self, tenant_id: str, key: str) -> dict[str, Any] | None:
        """The arguments a call left with under `key`, if its outcome was never stored."""
        row = await self.sql.fetchrow(LEDGER_DISPATCHED, {"tenant_id": tenant_id, "key": key})
        return None if row is None else dict(row["arguments"])

    async def ledger_put(
        self, ident: TurnIdentity, *, key: str, loop: int, call: ToolCall, result: ToolResult
    ) -> ToolResult:
        """Record a call's outcome; if the key already holds a completed result, that result wins."""
        values = ledger_row(ident, key=key, loop=loop, call=call, result=result)
        if await self.sql.execute(LEDGER_PUT[self.sql.dialect], values):
            return result
        stored = await self.ledger_get(ident.tenant_id, key)
        return stored or result

    async def record_audit(self, ident: TurnIdentity, kind: str, detail: dict[str, Any]) -> None:
        row = {"id": uuid.uuid4(), "tenant_id": ident.tenant_id, "turn_id": ident.turn_id, "kind": kind,
               "detail": detail, "created_at": utcnow()}  # fmt: skip
        await insert_rows(self.sql, AUDIT, [row])

    async def create_approvals(self, rows: Sequence[dict[str, Any]]) -> None:
        await insert_rows(self.sql, APPROVALS, rows)

    async def pending_approvals(self, tenant_id: str, turn_id: uuid.UUID) -> dict[str, uuid.UUID]:
        """The turn's pending approvals by tool call id (a run that died before ending the turn
        `interrupted` may have stored them)."""
        rows = await self.sql.fetch(PENDING_APPROVALS, {"tenant_id": tenant_id, "turn_id": turn_id})
        return {str(r["tool_call_id"]): uuid.UUID(str(r["id"])) for r in rows}

    async def current_status(self, tenant_id: str, turn_id: uuid.UUID) -> str:
        return str(await self.sql.fetchval(CURRENT_STATUS, {"tenant_id": tenant_id, "turn_id": turn_id}))

    async def plan_events(self, tenant_id: str, turn_id: uuid.UUID) -> list[dict[str, Any]]:
        """An autonomous turn's `plan.*` events in order: its plan and each step's state."""
        rows = await self.sql.fetch(PLAN_EVENTS, {"tenant_id": tenant_id, "turn_id": turn_id})
        return [orjson.loads(r["data"]) for r in rows]

    async def progress(self, tenant_id: str, turn_id: uuid.UUID) -> tuple[str, int]:
        """The turn's status and the seq its last settle stored (`last_seq`)."""
        row = await self.sql.fetchrow(TURN_PROGRESS, {"tenant_id": tenant_id, "turn_id": turn_id})
        if row is None:
            raise LookupError(f"turn {turn_id} not found")
        return str(row["status"]), int(row["last_seq"])

    async def events_after(self, tenant_id: str, turn_id: uuid.UUID, after: int, limit: int) -> list[LoggedEvent]:
        params = {"tenant_id": tenant_id, "turn_id": turn_id, "after": after, "limit": limit}
        return [LoggedEvent(r["seq"], r["type"], r["data"]) for r in await self.sql.fetch(EVENTS_AFTER, params)]

    async def expire_pending_approvals(self, tenant_id: str, turn_id: uuid.UUID) -> None:
        await self.sql.execute(EXPIRE_PENDING, {"in_tenant": tenant_id, "in_turn": turn_id})

    async def delete_messages(self, tenant_id: str, turn_id: uuid.UUID) -> None:
        await self.sql.execute(DELETE_MESSAGES, {"tenant_id": tenant_id, "turn_id": turn_id})

    async def max_seq(self, tenant_id: str, turn_id: uuid.UUID) -> int:
        return int(await self.sql.fetchval(MAX_SEQ, {"tenant_id": tenant_id, "turn_id": turn_id}) or 0)


def ledger_row(
    ident: TurnIdentity, *, key: str, loop: int, call: ToolCall, result: ToolResult | None
) -> dict[str, Any]:
    """A ledger row: `dispatched` (no result yet) or `completed`."""
    return {
        "id": uuid.uuid4(), "tenant_id": ident.tenant_id, "session_id": ident.session_id,
        "turn_id": ident.turn_id, "idempotency_key": key, "loop": loop, "tool_call_id": call.id,
        "tool_name": call.name, "arguments": call.arguments, "status": DISPATCHED if result is None else COMPLETED,
        "result": None if result is None else result.content, "is_error": bool(result and result.is_error),
        "created_at": utcnow(),
    }  # fmt: skip


async def load_history(sql: Sql, tenant_id: str, session_id: uuid.UUID) -> list[ChatMessage]:
    return [chat_message(r) for r in await sql.fetch(HISTORY, {"tenant_id": tenant_id, "session_id": session_id})]
