"""What a crash leaves behind is accounted for: the approvals of a turn that cannot be continued
expire when it fails, and a tool call that left the service is in the ledger (as `dispatched`, with its key) before
any outcome, so whoever continues knows it may have run and re-sends it under the same key."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
from fastapi import FastAPI
from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from app.models import Approval, Session, ToolExecution
from app.models.base import utcnow
from app.providers.base import ToolCall
from app.runtime.port.journal import TurnIdentity
from app.tools.base import ToolResult
from tests.approvals.helpers import turn_id
from tests.conftest import make_settings, running_app
from tests.sse import read_turn
from tests.turns.support import dispatch, scripted_session, wait_for_status
from tests.turns.test_turn_recovery import _orphan


async def test_recovery_expires_the_pending_approvals_of_the_turn_it_fails(
    client: httpx.AsyncClient,
    alice: dict[str, str],
    tenant: str,
    database_url: str,
    sql: AsyncEngine,
    tmp_path: Path,
) -> None:
    session = await scripted_session(client, alice)
    orphan = await _orphan(database_url, tenant, session)
    approval_id = uuid.uuid4()
    async with sql.begin() as conn:
        await conn.execute(
            update(Session)
            .where(Session.id == uuid.UUID(str(session["id"])))
            .values(snapshot={"model": {"provider": "retired-provider"}})
        )  # its provider is gone: it cannot continue
        await conn.execute(
            insert(Approval).values(
                id=approval_id, tenant_id=tenant, session_id=uuid.UUID(str(session["id"])), turn_id=orphan,
                owner_sub="alice", loop=0, tool_call_id="call_0_0", tool_name="calculator", arguments={},
                arguments_hash="0" * 64, status="pending", created_at=utcnow(),
            )
        )  # fmt: skip
    async with running_app(make_settings(database_url, tmp_path)) as (_, fresh):
        turn = await wait_for_status(fresh, alice, str(orphan))
        approval = (await fresh.get(f"/approvals/{approval_id}", headers=alice)).json()
        pending = (await fresh.get("/approvals?status=pending", headers=alice)).json()["items"]
        decided = await fresh.post(f"/approvals/{approval_id}", json={"decision": "approve"}, headers=alice)
    assert (turn["status"], turn["error"]["code"]) == ("failed", "server_restarted")
    assert approval["status"] == "expired"
    assert pending == []
    assert decided.status_code == 409


async def _ledger_rows(sql: AsyncEngine, key: str) -> list[tuple[str, str | None]]:
    async with sql.connect() as conn:
        rows = await conn.execute(
            select(ToolExecution.status, ToolExecution.result).where(ToolExecution.idempotency_key == key)
        )
        return [(r.status, r.result) for r in rows]


async def test_a_dispatched_call_is_in_the_ledger_before_its_outcome_and_completes_the_same_row(
    app: FastAPI, client: httpx.AsyncClient, alice: dict[str, str], tenant: str, sql: AsyncEngine
) -> None:
    session = await scripted_session(client, alice)
    frames = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers=alice)
    ident = TurnIdentity(tenant, uuid.UUID(session["id"]), uuid.UUID(turn_id(frames)), uuid.UUID(session["agent_id"]))
    store = app.state.container.turns.store
    call, key = ToolCall(id="call_9_0", name="echo", arguments={"text": "x"}), uuid.uuid4().hex

    await dispatch(store, ident, key=key, loop=9, call=call)
    assert await _ledger_rows(sql, key) == [("dispatched", None)]
    assert await store.ledger_get(tenant, key) is None, "no result: a continuation re-sends it"

    await dispatch(store, ident, key=key, loop=9, call=call)  # the re-send after a crash
    first = await store.ledger_put(ident, key=key, loop=9, call=call, result=ToolResult("x"))
    second = await store.ledger_put(ident, key=key, loop=9, call=call, result=ToolResult("other"))

    assert (first.content, second.content) == ("x", "x")
    assert await _ledger_rows(sql, key) == [("completed", "x")]
    assert await store.ledger_get(tenant, key) == ToolResult("x")


async def test_a_turn_that_ran_a_tool_leaves_one_completed_row_per_call(
    client: httpx.AsyncClient, alice: dict[str, str], sql: AsyncEngine
) -> None:
    step = {"tool_calls": [{"name": "echo", "arguments": {"text": "hello"}}]}
    session = await scripted_session(client, alice, step, {"text": "done"})
    frames = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers=alice)
    async with sql.connect() as conn:
        rows = (
            await conn.execute(
                select(ToolExecution.status, ToolExecution.result).where(
                    ToolExecution.turn_id == uuid.UUID(turn_id(frames))
                )
            )
        ).all()
    assert [(r.status, r.result) for r in rows] == [("completed", "hello")]
