"""The tenant's side of a Claude SDK turn: its key, resolved per turn like the LangGraph runtime's (BYOK), and its
token quota, which every model call Claude Code makes reserves from."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.claude_sdk.pool import ClientPool
from app.governance.period import period_bounds
from app.models import QuotaLedger, ToolExecution
from tests.claude_sdk.conftest import MOCK_KEY
from tests.claude_sdk.mock_anthropic import MockAnthropic, Step
from tests.claude_sdk.service import new_session, of, turn
from tests.conftest import TokenFactory
from tests.sse import read_turn
from tests.turns.support import POLL_TIMEOUT_SECONDS, wait_for_stored_event
from tests.usage.support import put_limits

TENANT_KEY = "sk-ant-tenant-own-key-0123456789"
ROTATED_KEY = "sk-ant-tenant-rotated-key-9876543210"


@pytest.fixture
def admin(tenant: str, auth_headers: TokenFactory) -> dict[str, str]:
    return auth_headers(tenant, "root", roles=["admin"])


async def keys_sent(anthropic: MockAnthropic) -> set[str]:
    return {entry.headers.get("x-api-key", "") for entry in anthropic.log if entry.path == "/v1/messages"}


async def test_claude_code_calls_the_model_with_the_tenant_key_and_a_rotated_key_restarts_it(
    api: httpx.AsyncClient, pool: ClientPool, alice: dict[str, str], admin: dict[str, str], anthropic: MockAnthropic
) -> None:
    stored = await api.put(
        "/credentials/anthropic",
        json={"provider": "anthropic", "api_key": TENANT_KEY, "base_url": anthropic.base_url},
        headers=admin,
    )
    assert stored.status_code in (200, 201), stored.text
    session_id = await new_session(api, alice)
    anthropic.play(Step(text="with the tenant's key"), Step(text="with the rotated key"))

    first = await turn(api, alice, session_id, "hi")
    assert first[-1].data["final_output"] == "with the tenant's key"
    assert await keys_sent(anthropic) == {TENANT_KEY}
    lease = pool.get(uuid.UUID(session_id))

    anthropic.log.clear()
    rotated = await api.put(
        "/credentials/anthropic",
        json={"provider": "anthropic", "api_key": ROTATED_KEY, "base_url": anthropic.base_url},
        headers=admin,
    )
    assert rotated.status_code == 200, rotated.text
    second = await turn(api, alice, session_id, "again")

    assert second[-1].data["final_output"] == "with the rotated key"
    assert await keys_sent(anthropic) == {ROTATED_KEY}
    assert pool.get(uuid.UUID(session_id)) is not lease
    assert "with the tenant's key" in str(anthropic.loop_requests()[-1]["messages"])  # the conversation goes on
    assert (await api.delete("/credentials/anthropic", headers=admin)).status_code == 204


async def test_a_byok_only_tenant_without_its_own_key_gets_no_claude_code_turn(
    api: httpx.AsyncClient, alice: dict[str, str], admin: dict[str, str], anthropic: MockAnthropic
) -> None:
    assert (await api.patch("/credentials", json={"byok_only": True}, headers=admin)).status_code == 200
    session_id = await new_session(api, alice)

    frames = await turn(api, alice, session_id, "hi")

    assert frames[-1].data["status"] == "failed"
    assert frames[-1].data["error"]["code"] == "provider_not_configured"
    assert MOCK_KEY not in str(frames)
    assert anthropic.log == []


async def ledger(sql: AsyncEngine, tenant: str) -> tuple[int, int]:
    start = period_bounds("day", datetime.now(UTC))[0]
    async with sql.connect() as conn:
        query = select(QuotaLedger.used, QuotaLedger.reserved).where(
            QuotaLedger.tenant_id == tenant, QuotaLedger.period_start == start
        )
        row = (await conn.execute(query)).one()
    return int(row.used), int(row.reserved)


def settled(ended: dict[str, Any]) -> tuple[int, int]:
    """The ledger of a tenant whose only turn ended as `ended`: its usage used, nothing reserved."""
    return ended["usage"]["input_tokens"] + ended["usage"]["output_tokens"], 0


async def quota_session(api: httpx.AsyncClient, admin: dict[str, str], alice: dict[str, str]) -> str:
    """A session of a tenant with a token quota far from spent."""
    await put_limits(api, admin, token_quota={"period": "day", "tokens": 100_000})
    return await new_session(api, alice)


async def test_every_model_call_reserves_from_the_quota_and_settles_to_its_usage(
    api: httpx.AsyncClient, alice: dict[str, str], admin: dict[str, str], anthropic: MockAnthropic,
    sql: AsyncEngine, tenant: str,
) -> None:  # fmt: skip
    session_id = await quota_session(api, admin, alice)
    anthropic.play(Step(tool_calls=[("mcp__agent__echo", {"text": "one"})]), Step(text="echoed"))

    frames = await turn(api, alice, session_id, "echo one")

    assert frames[-1].data["status"] == "completed"
    assert await ledger(sql, tenant) == settled(frames[-1].data)


async def test_a_quota_spent_mid_turn_stops_claude_code_before_its_next_call(
    api: httpx.AsyncClient, alice: dict[str, str], admin: dict[str, str], anthropic: MockAnthropic,
    sql: AsyncEngine, tenant: str,
) -> None:  # fmt: skip
    await put_limits(api, admin, token_quota={"period": "day", "tokens": 10})
    session_id = await new_session(api, alice)
    anthropic.play(Step(text="Echoing.", tool_calls=[("mcp__agent__echo", {"text": "one"})]), Step(text="never"))

    frames = await turn(api, alice, session_id, "echo one")

    ended = frames[-1].data
    assert ended["status"] == "budget_exceeded"
    assert ended["error"]["code"] == "quota_exceeded"
    assert ended["final_output"] == "Echoing."
    assert len(anthropic.loop_requests()) == 1
    assert of(frames, "tool_call.completed") == []
    async with sql.connect() as conn:
        ran = (await conn.execute(select(ToolExecution.id).where(ToolExecution.tenant_id == tenant))).all()
    assert ran == []
    assert await ledger(sql, tenant) == settled(ended)


async def test_a_cancelled_call_settles_its_reservation_to_the_usage_the_turn_records(
    api: httpx.AsyncClient, alice: dict[str, str], admin: dict[str, str], anthropic: MockAnthropic,
    sql: AsyncEngine, tenant: str,
) -> None:  # fmt: skip
    session_id = await quota_session(api, admin, alice)
    held = Step(text="a long answer that never ends", hold=asyncio.Event())
    anthropic.play(held)
    running = asyncio.create_task(turn(api, alice, session_id, "talk"))
    try:
        await asyncio.wait_for(held.holding.wait(), POLL_TIMEOUT_SECONDS)
        (active,) = (await api.get(f"/sessions/{session_id}/turns", headers=alice)).json()["items"]
        await wait_for_stored_event(sql, active["id"], "message.delta")
        assert (await api.post(f"/turns/{active['id']}/cancel", headers=alice)).status_code == 200
        frames = await asyncio.wait_for(running, POLL_TIMEOUT_SECONDS)
    finally:
        assert held.hold is not None
        held.hold.set()

    assert frames[-1].data["status"] == "cancelled"
    assert frames[-1].data["usage"]["input_tokens"] > 0, "the cut call counts"
    assert await ledger(sql, tenant) == settled(frames[-1].data)


async def test_an_approval_interrupt_and_its_resume_leave_no_quota_reserved(
    api: httpx.AsyncClient, alice: dict[str, str], admin: dict[str, str], anthropic: MockAnthropic,
    sql: AsyncEngine, tenant: str,
) -> None:  # fmt: skip
    session_id = await quota_session(api, admin, alice)
    anthropic.play(Step(text="Let me compute.", tool_calls=[("mcp__agent__calculator", {"expression": "6*7"})]))

    frames = await turn(api, alice, session_id, "what is six times seven?")
    interrupted = frames[-1].data
    assert interrupted["status"] == "interrupted"
    assert await ledger(sql, tenant) == settled(interrupted)

    anthropic.play(Step(text="It is 42."))
    (required,) = of(frames, "approval.required")
    url = f"/approvals/{required['approval_id']}"
    resumed = (await read_turn(api, "POST", url, json={"decision": "approve"}, headers=alice))[-1].data
    assert resumed["status"] == "completed"
    assert await ledger(sql, tenant) == settled(resumed)
