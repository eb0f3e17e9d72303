"""The TurnWriter's writes on real databases: one statement on PostgreSQL (asyncpg), a transaction on SQLite.

Every test runs against both backends through `open_sql` (AsyncpgSql on PostgreSQL, AlchemySql on a
migrated SQLite file), on a `running` turn with real parent rows (agent, session, runner, turn). Rows
are read back through SQLAlchemy, independently of the writer. Writers share a BatchFlusher with an
interval of an hour, so nothing is written except by the explicit flush/end or shared flush of the test.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
import pytest
from sqlalchemy import Table, func, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.sql import INTEGRITY_ERRORS, Sql, insert_rows
from app.providers.base import ChatMessage, ToolCall
from app.runtime.port.journal import ModelUsage, TurnIdentity
from app.runtime.store.batch import StagedRow
from app.runtime.store.status import SEQ_BLOCK
from app.runtime.store.turns import (
    DECISIONS,
    MESSAGES,
    TURNS,
    USAGE,
    message_row,
    release_turn,
    settle_turn,
    usage_row,
)
from app.runtime.stream import EVENTS, BatchFlusher, TurnStream, TurnWriter
from tests.turns.support import now, raw_event

POLICY_HASH = "f" * 64
TRICKY_TEXT = "NULL, \"quoted\" {braces} [brackets] back\\slash 'single' é✓ \n newline"
"""Text that would break an array literal or a naive JSON encoding; the string "NULL" must stay a string."""


@pytest.fixture
async def ident(make_turn: Callable[[], Awaitable[TurnIdentity]]) -> TurnIdentity:
    return await make_turn()


@pytest.fixture
async def writer(db: Sql, flusher: BatchFlusher) -> AsyncIterator[TurnWriter]:
    created = TurnWriter(db, flusher)
    try:
        yield created
    finally:
        created._rows.clear()  # a test that left a bad row must not fail teardown
        await created.close()


def stream_for(ident: TurnIdentity, writer: TurnWriter, last_seq: int = 0) -> TurnStream:
    """A run's stream as the engine opens it: its start reserved a block of event ids."""
    return TurnStream(
        turn_id=ident.turn_id, tenant_id=ident.tenant_id, last_seq=last_seq, writer=writer,
        ceiling=last_seq + SEQ_BLOCK,
    )  # fmt: skip


def receipt_row(ident: TurnIdentity, **fields: Any) -> dict[str, Any]:
    """A receipt with only the given columns (the writer groups rows by their column sets)."""
    return {"id": uuid.uuid4(), "tenant_id": ident.tenant_id, "session_id": ident.session_id,
            "turn_id": ident.turn_id, "created_at": now(), **fields}  # fmt: skip


def event_row(ident: TurnIdentity, seq: int, event_type: str = "custom") -> dict[str, Any]:
    data = orjson.dumps({"turn_id": str(ident.turn_id), "seq": seq, "type": event_type}).decode()
    return {"turn_id": ident.turn_id, "seq": seq, "tenant_id": ident.tenant_id, "type": event_type, "data": data,
            "created_at": now()}  # fmt: skip


def assistant_with_calls(*calls: ToolCall) -> ChatMessage:
    return ChatMessage(role="assistant", content="", tool_calls=calls)


def tool_result(call: ToolCall, content: str, *, is_error: bool = False) -> ChatMessage:
    return ChatMessage(role="tool", content=content, tool_call_id=call.id, name=call.name, is_error=is_error)


CALL_A = ToolCall(id="call-a", name="echo", arguments={"text": TRICKY_TEXT, "n": [1, 2.5, None, True], "o": {}})
CALL_B = ToolCall(id="call-b", name="calculator", arguments={"expression": "6*7", "nested": {"k": [{"x": None}]}})


# --- reading back ---------------------------------------------------------------------------------


async def read(engine: AsyncEngine, table: Table, turn_id: uuid.UUID, *order: str) -> list[dict[str, Any]]:
    query = select(table).where(table.c.turn_id == turn_id).order_by(*(table.c[c] for c in order))
    async with engine.connect() as conn:
        return [dict(row) for row in (await conn.execute(query)).mappings()]


async def count(engine: AsyncEngine, table: Table, turn_id: uuid.UUID) -> int:
    async with engine.connect() as conn:
        found = await conn.scalar(select(func.count()).select_from(table).where(table.c.turn_id == turn_id))
    return int(found or 0)


async def counts(engine: AsyncEngine, turn_id: uuid.UUID) -> dict[str, int]:
    return {table.name: await count(engine, table, turn_id) for table in (EVENTS, MESSAGES, USAGE, DECISIONS)}


async def turn(engine: AsyncEngine, turn_id: uuid.UUID) -> dict[str, Any]:
    async with engine.connect() as conn:
        row = (await conn.execute(select(TURNS).where(TURNS.c.id == turn_id))).mappings().one()
    return dict(row)


async def set_status(engine: AsyncEngine, turn_id: uuid.UUID, status: str) -> None:
    async with engine.begin() as conn:
        await conn.execute(update(TURNS).where(TURNS.c.id == turn_id).values(status=status, final_output="kept"))


def stored_message(row: dict[str, Any]) -> dict[str, Any]:
    return {c: row[c] for c in ("tenant_id", "session_id", "turn_id", "role", "content", "tool_calls",
                                "tool_call_id", "name", "is_error", "attachments", "created_at")}  # fmt: skip


def without(rows: list[StagedRow], bad: dict[str, Any]) -> list[StagedRow]:
    return [(table, row) for table, row in rows if row is not bad]


# --- 1. a flush of mixed rows ---------------------------------------------------------------------


async def test_a_flush_of_mixed_rows_stores_each_row_once_with_its_values(
    engine: AsyncEngine, writer: TurnWriter, ident: TurnIdentity
) -> None:
    stream = stream_for(ident, writer)
    messages = [
        message_row(ident, assistant_with_calls(CALL_A, CALL_B)),
        message_row(ident, tool_result(CALL_A, TRICKY_TEXT)),
        message_row(ident, tool_result(CALL_B, "NULL", is_error=True)),
        message_row(ident, ChatMessage(role="assistant", content="the answer is 42")),
    ]
    usage = usage_row(ident, ModelUsage("scripted-1", 11, 7))
    decision = receipt_row(ident, point="tool", tool_call_id=CALL_A.id, tool_name=CALL_A.name, verdict="allow",
                            rule_id="r-1", reason=TRICKY_TEXT, policy_hash=POLICY_HASH)  # fmt: skip

    stream.emit(raw_event("turn.started", {"input": "go"}))
    stream.emit(raw_event("node.started", {"node": "llm"}))
    stream.stage(MESSAGES, messages[0])
    stream.stage(USAGE, usage)
    stream.emit(raw_event("tool_call.started", {"id": CALL_A.id, "text": TRICKY_TEXT}))
    stream.stage(DECISIONS, decision)
    stream.stage(MESSAGES, messages[1])
    stream.stage(MESSAGES, messages[2])
    stream.emit(raw_event("message.delta", {"text": "the answer"}))
    stream.stage(MESSAGES, messages[3])
    assert await counts(engine, ident.turn_id) == {"turn_events": 0, "messages": 0, "usage": 0,
                                                   "policy_decisions": 0}  # fmt: skip
    await stream.flush()

    assert writer._rows == []
    assert await counts(engine, ident.turn_id) == {"turn_events": 4, "messages": 4, "usage": 1,
                                                   "policy_decisions": 1}  # fmt: skip
    events = await read(engine, EVENTS, ident.turn_id, "seq")
    assert [(e["seq"], e["type"]) for e in events] == [
        (1, "turn.started"), (2, "node.started"), (3, "tool_call.started"), (4, "message.delta"),
    ]  # fmt: skip
    assert orjson.loads(events[2]["data"]) == {
        "turn_id": str(ident.turn_id), "seq": 3, "type": "tool_call.started", "id": CALL_A.id, "text": TRICKY_TEXT,
    }  # fmt: skip
    assert all(e["tenant_id"] == ident.tenant_id for e in events)

    stored = await read(engine, MESSAGES, ident.turn_id, "id")
    assert [stored_message(m) for m in stored] == messages  # conversation order, every value as staged
    assert stored[0]["tool_calls"] == [
        {"id": "call-a", "name": "echo", "arguments": {"text": TRICKY_TEXT, "n": [1, 2.5, None, True], "o": {}}},
        {"id": "call-b", "name": "calculator", "arguments": {"expression": "6*7", "nested": {"k": [{"x": None}]}}},
    ]
    assert [m["tool_calls"] for m in stored[1:]] == [None, None, None]
    assert stored[2]["content"] == "NULL"
    assert [m["id"] for m in stored] == sorted(m["id"] for m in stored)

    [stored_usage] = await read(engine, USAGE, ident.turn_id)
    assert {c: stored_usage[c] for c in usage} == usage
    [stored_decision] = await read(engine, DECISIONS, ident.turn_id)
    assert {c: stored_decision[c] for c in decision} == decision


async def test_python_none_in_a_json_column_is_stored_as_sql_null(
    engine: AsyncEngine, writer: TurnWriter, ident: TurnIdentity
) -> None:
    writer.stage(MESSAGES, message_row(ident, ChatMessage(role="assistant", content="plain")))
    writer.stage(MESSAGES, message_row(ident, assistant_with_calls(CALL_A)))
    await writer.flush()
    async with engine.connect() as conn:
        nulls = await conn.scalar(
            select(func.count()).select_from(MESSAGES)
            .where(MESSAGES.c.turn_id == ident.turn_id, MESSAGES.c.tool_calls.is_(None))
        )  # fmt: skip
    assert nulls == 1


async def test_message_ids_keep_staged_order_across_writes(
    engine: AsyncEngine, writer: TurnWriter, ident: TurnIdentity
) -> None:
    stream = stream_for(ident, writer)
    contents = [f"m{i}" for i in range(7)]
    for i, content in enumerate(contents[:4]):
        stream.stage(MESSAGES, message_row(ident, ChatMessage(role="assistant" if i % 2 else "tool", content=content)))
        stream.emit(raw_event("message.completed", {"text": content}))
    await stream.flush()
    for content in contents[4:]:
        stream.stage(MESSAGES, message_row(ident, ChatMessage(role="assistant", content=content)))
    await stream.flush()

    stored = await read(engine, MESSAGES, ident.turn_id, "id")
    assert [m["content"] for m in stored] == contents
    assert await count(engine, EVENTS, ident.turn_id) == 4


async def test_a_flush_with_nothing_staged_writes_nothing(
    engine: AsyncEngine, writer: TurnWriter, ident: TurnIdentity
) -> None:
    await writer.flush()
    assert await counts(engine, ident.turn_id) == {"turn_events": 0, "messages": 0, "usage": 0,
                                                   "policy_decisions": 0}  # fmt: skip
    assert (await turn(engine, ident.turn_id))["status"] == "running"


async def test_a_single_staged_row_is_written(engine: AsyncEngine, writer: TurnWriter, ident: TurnIdentity) -> None:
    """SQLite takes a shortcut for one row without a settle; the row must land all the same."""
    row = message_row(ident, assistant_with_calls(CALL_B))
    writer.stage(MESSAGES, row)
    await writer.flush()
    [stored] = await read(engine, MESSAGES, ident.turn_id, "id")
    assert stored_message(stored) == row


async def test_the_background_flush_writes_staged_rows_without_an_explicit_flush(
    engine: AsyncEngine, db: Sql, ident: TurnIdentity
) -> None:
    flusher = BatchFlusher(db, interval=0.01)
    writer = TurnWriter(db, flusher)
    stream = stream_for(ident, writer)
    try:
        for i in range(3):
            stream.emit(raw_event("message.delta", {"text": f"t{i}"}))
        async with asyncio.timeout(10):
            while await count(engine, EVENTS, ident.turn_id) < 3:
                await asyncio.sleep(0.02)
        assert writer._rows == []
    finally:
        await writer.close()
        await flusher.close()
    assert [e["seq"] for e in await read(engine, EVENTS, ident.turn_id, "seq")] == [1, 2, 3]


# --- 2./3. the turn's end -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error", "final_output"),
    [("completed", None, "the answer is 42"), ("failed", {"code": "provider_error", "detail": {"loop": [1, 2]}}, None)],
    ids=["completed", "failed-with-error"],
)
async def test_end_settles_a_running_turn_and_stores_the_closing_event_with_the_staged_rows(
    engine: AsyncEngine,
    writer: TurnWriter,
    ident: TurnIdentity,
    status: str,
    error: dict[str, Any] | None,
    final_output: str | None,
) -> None:
    stream = stream_for(ident, writer, last_seq=5)  # a resumed turn continues its sequence
    stream.emit(raw_event("node.started", {"node": "llm"}))
    message = message_row(ident, ChatMessage(role="assistant", content="the answer is 42"))
    stream.stage(MESSAGES, message)
    usage = usage_row(ident, ModelUsage("scripted-1", 3, 4))
    stream.stage(USAGE, usage)
    stream.emit(raw_event("usage", {"input_tokens": 3, "output_tokens": 4}))
    ended_at = now()
    values = {"status": status, "final_output": final_output, "error": error, "input_tokens": 3,
              "output_tokens": 4, "loop_count": 1, "last_seq": stream.last_seq + 1, "ended_at": ended_at}  # fmt: skip
    settle = settle_turn(ident, values)
    assert await counts(engine, ident.turn_id) == {"turn_events": 0, "messages": 0, "usage": 0,
                                                   "policy_decisions": 0}  # fmt: skip

    assert await stream.end(raw_event("turn.ended", {"status": status, "error": error}), settle) is True

    assert stream.done
    row = await turn(engine, ident.turn_id)
    assert {c: row[c] for c in values} == values
    assert row["updated_at"] == settle.values["updated_at"]
    events = await read(engine, EVENTS, ident.turn_id, "seq")
    assert [(e["seq"], e["type"]) for e in events] == [(6, "node.started"), (7, "usage"), (8, "turn.ended")]
    assert events[-1]["seq"] == stream.last_seq == row["last_seq"]
    assert orjson.loads(events[-1]["data"]) == {
        "turn_id": str(ident.turn_id), "seq": 8, "type": "turn.ended", "status": status, "error": error,
    }  # fmt: skip
    [stored] = await read(engine, MESSAGES, ident.turn_id, "id")
    assert stored_message(stored) == message
    assert await count(engine, USAGE, ident.turn_id) == 1
    assert writer._rows == []


async def test_end_with_nothing_staged_settles_and_stores_only_the_closing_event(
    engine: AsyncEngine, writer: TurnWriter, ident: TurnIdentity
) -> None:
    stream = stream_for(ident, writer)
    settle = settle_turn(ident, {"status": "completed", "last_seq": 1, "ended_at": now()})
    assert await stream.end(raw_event("turn.ended", {"status": "completed"}), settle) is True
    assert (await turn(engine, ident.turn_id))["status"] == "completed"
    assert [(e["seq"], e["type"]) for e in await read(engine, EVENTS, ident.turn_id, "seq")] == [(1, "turn.ended")]


async def test_a_run_another_runner_took_over_can_neither_settle_nor_release_the_turn(
    engine: AsyncEngine, db: Sql, flusher: BatchFlusher, ident: TurnIdentity
) -> None:
    stale = TurnWriter(db, flusher, runner_id=uuid.uuid4())  # the turn names another runner now
    stream = stream_for(ident, stale)
    settle = settle_turn(ident, {"status": "completed", "last_seq": 1, "ended_at": now()})
    assert await stream.end(raw_event("turn.ended", {"status": "completed"}), settle) is False
    assert (await turn(engine, ident.turn_id))["status"] == "running"
    assert await read(engine, EVENTS, ident.turn_id, "seq") == []
    another = stream_for(ident, TurnWriter(db, flusher, runner_id=uuid.uuid4()))
    assert await another.hand_over(release_turn(ident)) is False
    assert (await turn(engine, ident.turn_id))["handed_over"] is False


async def test_end_on_a_turn_that_already_left_running_keeps_it_drops_the_closing_event_but_stores_the_rest(
    engine: AsyncEngine, writer: TurnWriter, ident: TurnIdentity
) -> None:
    stream = stream_for(ident, writer)
    stream.emit(raw_event("turn.started", {"input": "go"}))
    message = message_row(ident, assistant_with_calls(CALL_A))
    stream.stage(MESSAGES, message)
    decision = receipt_row(ident, point="tool", tool_call_id=CALL_A.id, tool_name=CALL_A.name, verdict="deny",
                            rule_id=None, reason=None, policy_hash=POLICY_HASH)  # fmt: skip
    stream.stage(DECISIONS, decision)
    stream.emit(raw_event("policy.decision", {"verdict": "deny"}))
    await set_status(engine, ident.turn_id, "cancelled")
    before = await turn(engine, ident.turn_id)

    settle = settle_turn(ident, {"status": "completed", "final_output": "overwritten?", "last_seq": 3,
                                 "ended_at": now()})  # fmt: skip
    assert await stream.end(raw_event("turn.ended", {"status": "completed"}), settle) is False

    assert await turn(engine, ident.turn_id) == before  # status, final_output, last_seq, updated_at untouched
    assert before["status"] == "cancelled"
    events = await read(engine, EVENTS, ident.turn_id, "seq")
    assert [(e["seq"], e["type"]) for e in events] == [(1, "turn.started"), (2, "policy.decision")]
    [stored] = await read(engine, MESSAGES, ident.turn_id, "id")
    assert stored_message(stored) == message
    [stored_decision] = await read(engine, DECISIONS, ident.turn_id)
    assert {c: stored_decision[c] for c in decision} == decision
    assert writer._rows == []


# --- 4. atomicity ---------------------------------------------------------------------------------


def bad_row(ident: TurnIdentity, kind: str) -> StagedRow:
    if kind == "message-of-unknown-session":
        orphan = TurnIdentity(ident.tenant_id, uuid.uuid4(), ident.turn_id, ident.agent_id)
        return MESSAGES, message_row(orphan, ChatMessage(role="assistant", content="orphan"))
    return EVENTS, event_row(ident, 1, "duplicate")  # seq 1 is stored by the first flush of the test


VIOLATIONS = pytest.mark.parametrize("kind", ["message-of-unknown-session", "event-with-duplicate-seq"])


def stage_good_rows(ident: TurnIdentity, stream: TurnStream) -> list[dict[str, Any]]:
    """Rows of every table, events around them; returns the messages in staged order."""
    messages = [message_row(ident, assistant_with_calls(CALL_A)), message_row(ident, tool_result(CALL_A, "A"))]
    stream.emit(raw_event("node.started", {"node": "llm"}))
    stream.stage(MESSAGES, messages[0])
    stream.stage(USAGE, usage_row(ident, ModelUsage("scripted-1", 1, 2)))
    stream.stage(DECISIONS, receipt_row(ident, point="tool", verdict="allow", policy_hash=POLICY_HASH))
    stream.emit(raw_event("tool_call.completed", {"id": CALL_A.id}))
    stream.stage(MESSAGES, messages[1])
    return messages


@VIOLATIONS
async def test_a_failing_flush_stores_nothing_of_its_rows_and_keeps_them_for_the_next_one(
    engine: AsyncEngine, writer: TurnWriter, ident: TurnIdentity, kind: str
) -> None:
    stream = stream_for(ident, writer)
    stream.emit(raw_event("turn.started", {"input": "go"}))
    await stream.flush()
    messages = stage_good_rows(ident, stream)
    bad = bad_row(ident, kind)
    stream.stage(*bad)
    stream.emit(raw_event("message.delta", {"text": "after the bad row"}))
    staged = list(writer._rows)
    assert len(staged) == 8

    with pytest.raises(INTEGRITY_ERRORS):
        await stream.flush()

    assert await counts(engine, ident.turn_id) == {"turn_events": 1, "messages": 0, "usage": 0,
                                                   "policy_decisions": 0}  # fmt: skip
    assert writer._rows == staged  # all of them, in staged order

    writer._rows = without(writer._rows, bad[1])
    await stream.flush()

    assert writer._rows == []
    assert await counts(engine, ident.turn_id) == {"turn_events": 4, "messages": 2, "usage": 1,
                                                   "policy_decisions": 1}  # fmt: skip
    events = await read(engine, EVENTS, ident.turn_id, "seq")
    assert [(e["seq"], e["type"]) for e in events] == [
        (1, "turn.started"), (2, "node.started"), (3, "tool_call.completed"), (4, "message.delta"),
    ]  # fmt: skip
    assert [stored_message(m) for m in await read(engine, MESSAGES, ident.turn_id, "id")] == messages


@VIOLATIONS
async def test_a_failing_last_write_neither_settles_nor_stores_anything_and_can_be_retried(
    engine: AsyncEngine, writer: TurnWriter, ident: TurnIdentity, kind: str
) -> None:
    stream = stream_for(ident, writer)
    stream.emit(raw_event("turn.started", {"input": "go"}))
    await stream.flush()
    stage_good_rows(ident, stream)
    bad = bad_row(ident, kind)
    writer.stage(*bad)
    staged = list(writer._rows)
    closing = event_row(ident, stream.last_seq + 1, "turn.ended")
    settle = settle_turn(ident, {"status": "completed", "last_seq": closing["seq"], "ended_at": now()})

    with pytest.raises(INTEGRITY_ERRORS):
        await writer.close(settle, (EVENTS, closing))

    assert (await turn(engine, ident.turn_id))["status"] == "running"
    assert await counts(engine, ident.turn_id) == {"turn_events": 1, "messages": 0, "usage": 0,
                                                   "policy_decisions": 0}  # fmt: skip
    assert writer._rows == staged

    writer._rows = without(writer._rows, bad[1])
    assert await writer.close(settle, (EVENTS, closing)) is True

    assert (await turn(engine, ident.turn_id))["status"] == "completed"
    assert await counts(engine, ident.turn_id) == {"turn_events": 4, "messages": 2, "usage": 1,
                                                   "policy_decisions": 1}  # fmt: skip
    events = await read(engine, EVENTS, ident.turn_id, "seq")
    assert [e["type"] for e in events][-1] == "turn.ended"
    assert [e["seq"] for e in events] == [1, 2, 3, 4]


async def test_a_failing_end_through_the_stream_leaves_the_turn_running(
    engine: AsyncEngine, writer: TurnWriter, ident: TurnIdentity
) -> None:
    stream = stream_for(ident, writer)
    stage_good_rows(ident, stream)
    stream.stage(*bad_row(ident, "message-of-unknown-session"))
    settle = settle_turn(ident, {"status": "completed", "last_seq": stream.last_seq + 1, "ended_at": now()})

    with pytest.raises(INTEGRITY_ERRORS):
        await stream.end(raw_event("turn.ended", {"status": "completed"}), settle)

    assert stream.done
    assert (await turn(engine, ident.turn_id))["status"] == "running"
    assert await counts(engine, ident.turn_id) == {"turn_events": 0, "messages": 0, "usage": 0,
                                                   "policy_decisions": 0}  # fmt: skip
    assert len(writer._rows) == 7  # the closing event is not kept: a retry passes it again


# --- 5. rows of one table with different column sets ------------------------------------------------


async def test_decision_rows_with_different_column_sets_in_one_write_are_all_stored(
    engine: AsyncEngine, writer: TurnWriter, ident: TurnIdentity
) -> None:
    short = receipt_row(ident, point="input", verdict="allow", policy_hash=POLICY_HASH)
    full = receipt_row(ident, point="tool", tool_call_id=CALL_B.id, tool_name=CALL_B.name, verdict="deny",
                        rule_id="no-calc", reason=TRICKY_TEXT, policy_hash=POLICY_HASH)  # fmt: skip
    other_short = receipt_row(ident, point="output", verdict="allow", policy_hash=POLICY_HASH)
    assert tuple(short) != tuple(full)
    writer.stage(DECISIONS, short)
    writer.stage(DECISIONS, full)
    writer.stage(MESSAGES, message_row(ident, ChatMessage(role="assistant", content="between")))
    writer.stage(DECISIONS, other_short)
    await writer.flush()

    stored = {row["id"]: row for row in await read(engine, DECISIONS, ident.turn_id)}
    assert set(stored) == {short["id"], full["id"], other_short["id"]}
    for staged in (short, full, other_short):
        assert {c: stored[staged["id"]][c] for c in staged} == staged
    for missing in ("tool_call_id", "tool_name", "rule_id", "reason"):
        assert stored[short["id"]][missing] is None
        assert stored[other_short["id"]][missing] is None
    assert await count(engine, MESSAGES, ident.turn_id) == 1


# --- 6. many events -------------------------------------------------------------------------------


async def test_a_write_of_many_events_stores_them_all_in_seq_order(
    engine: AsyncEngine, writer: TurnWriter, ident: TurnIdentity
) -> None:
    stream = stream_for(ident, writer)
    texts = [f"token {i} {TRICKY_TEXT if i % 50 == 0 else ''}" for i in range(200)]
    seqs = [stream.emit(raw_event("message.delta", {"text": text})) for text in texts]
    assert seqs == list(range(1, 201))
    assert len(writer._rows) == 200
    await stream.flush()

    events = await read(engine, EVENTS, ident.turn_id, "seq")
    assert [e["seq"] for e in events] == seqs
    assert [orjson.loads(e["data"])["text"] for e in events] == texts
    assert {e["type"] for e in events} == {"message.delta"}
    assert writer._rows == []


# --- the shared flush (group commit) ---------------------------------------------------------------


async def test_one_shared_flush_writes_the_staged_rows_of_every_turn(
    engine: AsyncEngine, db: Sql, flusher: BatchFlusher, make_turn: Callable[[], Awaitable[TurnIdentity]]
) -> None:
    first, second = await make_turn(), await make_turn()
    writers = [TurnWriter(db, flusher), TurnWriter(db, flusher)]
    streams = [stream_for(first, writers[0]), stream_for(second, writers[1])]
    for i in range(2):
        streams[0].emit(raw_event("message.delta", {"text": f"a{i}"}))
    for i in range(3):
        streams[1].emit(raw_event("message.delta", {"text": f"b{i}"}))
    writers[0].stage(MESSAGES, message_row(first, ChatMessage(role="assistant", content="a")))
    await flusher.write_pending()
    assert await counts(engine, first.turn_id) == {"turn_events": 2, "messages": 1, "usage": 0, "policy_decisions": 0}
    assert await counts(engine, second.turn_id) == {"turn_events": 3, "messages": 0, "usage": 0, "policy_decisions": 0}
    assert [w._rows for w in writers] == [[], []]
    for writer in writers:
        await writer.close()


async def test_a_bad_row_in_a_shared_flush_holds_back_only_its_own_turn(
    engine: AsyncEngine, db: Sql, flusher: BatchFlusher, make_turn: Callable[[], Awaitable[TurnIdentity]]
) -> None:
    good, bad = await make_turn(), await make_turn()
    await insert_rows(db, EVENTS, [event_row(bad, 1, "stored")])
    good_writer, bad_writer = TurnWriter(db, flusher), TurnWriter(db, flusher)
    stream_for(good, good_writer).emit(raw_event("message.delta", {"text": "fine"}))
    stream_for(bad, bad_writer).emit(raw_event("message.delta", {"text": "seq 1 again"}))
    await flusher.write_pending()
    assert await count(engine, EVENTS, good.turn_id) == 1
    assert [e["type"] for e in await read(engine, EVENTS, bad.turn_id, "seq")] == ["stored"]
    assert [row["seq"] for _, row in bad_writer._rows] == [1]
    assert bad_writer in flusher._pending
    bad_writer._rows.clear()
    await good_writer.close()
    await bad_writer.close()


async def test_a_turn_writing_on_its_own_waits_for_the_next_shared_flush(
    engine: AsyncEngine, db: Sql, flusher: BatchFlusher, ident: TurnIdentity
) -> None:
    writer = TurnWriter(db, flusher)
    stream_for(ident, writer).emit(raw_event("message.delta", {"text": "later"}))
    async with writer.lock:
        await flusher.write_pending()
        assert await count(engine, EVENTS, ident.turn_id) == 0
        assert writer in flusher._pending
    await flusher.write_pending()
    assert await count(engine, EVENTS, ident.turn_id) == 1
    await writer.close()
