"""The Claude SDK runtime's key is the tenant's, resolved per turn like the LangGraph runtime's (BYOK)."""

from __future__ import annotations

import uuid

import httpx
import pytest

from app.claude_sdk.pool import ClientPool
from tests.claude_sdk.conftest import MOCK_KEY
from tests.claude_sdk.mock_anthropic import MockAnthropic, Step
from tests.claude_sdk.service import new_session, turn
from tests.conftest import TokenFactory

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
