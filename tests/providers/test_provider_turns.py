"""Done-when: an agent on each provider runs a streamed tool turn with an approval, exactly like the
scripted agent, against a loopback server speaking that provider's wire format, with the key taken
from the tenant's credential (the operator's environment key is set too, and never used)."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.models import Base
from app.settings import AnthropicSettings, GeminiSettings, OpenAISettings, ProviderSettings, Settings
from tests.approvals.helpers import GATE_CALCULATOR, approval_ids, ended, events, results
from tests.conftest import TokenFactory, make_settings, running_app
from tests.llm_servers import FINAL_TEXT, FIRST_TEXT, LlmServer, llm_server
from tests.sse import Frame, read_turn

MODELS = {"openai": "llama3.1:8b", "gemini": "gemini-2.5-flash", "anthropic": "claude-sonnet-4-5"}
TENANT_KEYS = {
    "openai": "sk-tenant-openai-KEY-0123456789abcdef",
    "gemini": "AIzaTENANT-gemini-KEY-0123456789abcdef",
    "anthropic": "sk-ant-tenant-anthropic-KEY-0123456789",
}
OPERATOR_KEY = "sk-operator-env-KEY-do-not-use-0123456"


def provider_settings(database_url: str, data_dir: Path) -> Settings:
    return make_settings(
        database_url,
        data_dir,
        providers=ProviderSettings(allowed_hosts=["127.0.0.1"]),
        openai=OpenAISettings(api_key=OPERATOR_KEY, max_retries=0),
        gemini=GeminiSettings(api_key=OPERATOR_KEY, max_retries=0),
        anthropic=AnthropicSettings(api_key=OPERATOR_KEY, max_retries=0),
    )


@pytest.fixture(scope="module")
async def provider_client(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[httpx.AsyncClient]:
    settings = provider_settings(database_url, tmp_path_factory.mktemp("providers"))
    async with running_app(settings) as (_, client):
        yield client


def key_sent(request_headers: dict[str, str]) -> str:
    """Gemini sends `x-goog-api-key`; OpenAI and the Anthropic SDK 2.x send a bearer token."""
    return request_headers.get("x-goog-api-key") or request_headers["authorization"].removeprefix("Bearer ")


async def start_agent_turn(client: httpx.AsyncClient, admin: dict[str, str], provider: str, server: LlmServer,
                           ) -> tuple[dict[str, Any], list[Frame]]:  # fmt: skip
    stored = await client.put(
        f"/credentials/{provider}",
        json={"provider": provider, "api_key": TENANT_KEYS[provider], "base_url": server.url},
        headers=admin,
    )
    assert stored.status_code == 201, stored.text
    config = {
        "model": {"provider": provider, "name": MODELS[provider], "max_tokens": 200},
        "system_prompt": "You are a careful assistant.",
        "tools": ["builtin:calculator"],
        "policies": [GATE_CALCULATOR],
    }
    agent = (await client.post("/agents", json={"name": provider, "config": config}, headers=admin)).json()
    session = (await client.post("/sessions", json={"agent_id": agent["id"]}, headers=admin)).json()
    frames = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "6*7?"},
                             headers=admin)  # fmt: skip
    return session, frames


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic"])
async def test_a_streamed_tool_turn_with_an_approval_runs_on_the_tenants_credential(
    provider_client: httpx.AsyncClient, tenant: str, auth_headers: TokenFactory, provider: str
) -> None:
    client = provider_client
    admin = auth_headers(tenant, "root", roles=["admin"])
    async with llm_server(provider) as server:
        session, first = await start_agent_turn(client, admin, provider, server)

        assert ended(first)["status"] == "interrupted", ended(first)
        assert "".join(e["text"] for e in events(first, "message.delta")) == FIRST_TEXT
        assert events(first, "message.completed")[0]["text"] == FIRST_TEXT
        assert events(first, "message.completed")[0]["stop_reason"] == "tool_use"
        requested = events(first, "tool_call.requested")
        assert [(r["name"], r["arguments"]) for r in requested] == [("calculator", {"expression": "6*7"})]
        assert events(first, "usage")[0] == {**events(first, "usage")[0], "input_tokens": 25, "output_tokens": 9}

        decided = await read_turn(client, "POST", f"/approvals/{approval_ids(first)[0]}",
                                  json={"decision": "approve"}, headers=admin)  # fmt: skip

    assert results(decided) == ["42"]
    assert ended(decided)["status"] == "completed"
    assert ended(decided)["final_output"] == FINAL_TEXT
    assert "".join(e["text"] for e in events(decided, "message.delta")) == FINAL_TEXT
    assert events(decided, "message.completed")[-1]["stop_reason"] == "end_turn"
    assert len(server.requests) == 2
    assert {key_sent(r.headers) for r in server.requests} == {TENANT_KEYS[provider]}
    messages = (await client.get(f"/sessions/{session['id']}/messages", headers=admin)).json()["items"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]


async def dump_every_table(engine: AsyncEngine) -> list[Any]:
    values: list[Any] = []
    async with engine.connect() as conn:
        for table in Base.metadata.sorted_tables:
            for row in (await conn.execute(select(table))).all():
                values.extend(row)
    return values


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic"])
async def test_the_key_appears_in_no_log_event_error_or_table(
    provider_client: httpx.AsyncClient,
    tenant: str,
    auth_headers: TokenFactory,
    provider: str,
    sql: AsyncEngine,
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = provider_client
    admin = auth_headers(tenant, "root", roles=["admin"])
    key = TENANT_KEYS[provider]
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    async with llm_server(provider) as server:
        session, first = await start_agent_turn(client, admin, provider, server)
        decided = await read_turn(client, "POST", f"/approvals/{approval_ids(first)[0]}",
                                  json={"decision": "approve"}, headers=admin)  # fmt: skip
        server.fail_with = (401, {"error": {"message": f"invalid key {key}", "type": "authentication_error"}})
        failed = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "again"},
                                 headers=admin)  # fmt: skip
        for path in (
            f"/turns/{failed[0].data['turn_id']}",
            f"/sessions/{session['id']}/messages",
            "/credentials",
            f"/sessions/{session['id']}/turns",
        ):
            seen.append((await client.get(path, headers=admin)).text)

    assert ended(decided)["status"] == "completed"
    error = ended(failed)["error"]
    assert (ended(failed)["status"], error["code"]) == ("failed", "provider_auth_failed")
    assert "[redacted]" in error["message"], error
    seen += [json.dumps(frame.data) for frame in [*first, *decided, *failed]]
    seen += [caplog.text, *(repr(record.args) for record in caplog.records)]
    assert caplog.records, "the turn logged nothing to search"
    for text in seen:
        assert key not in text
    rows = await dump_every_table(sql)
    assert rows
    for value in rows:
        if isinstance(value, bytes | memoryview):
            assert key.encode() not in bytes(value)
        else:
            assert key not in str(value)
