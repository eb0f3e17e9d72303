"""JSON log lines: the access line of every request with its ids, X-Request-ID, failed turns, no secrets."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.core.access import request_id_from
from app.runtime.runner import INTERNAL_ERROR_MESSAGE
from app.runtime.store.turns import TurnStore
from app.settings import AnthropicSettings, ObservabilitySettings, WebhookSettings
from tests.approvals.helpers import gated_config, open_session
from tests.conftest import TEST_SECRET, TokenFactory, make_settings, running_app
from tests.factories import create_agent, create_session
from tests.observability.capture import captured_logs
from tests.sse import read_turn
from tests.turns.support import POLL_TIMEOUT_SECONDS, scripted_session

ANTHROPIC_KEY = "sk-ant-test-key-that-must-never-be-logged-0123456789"
URL_TOKEN = "url-token-that-must-never-be-logged-9876"


def _access_lines(records: list[dict[str, object]]) -> list[dict[str, object]]:
    return [r for r in records if r.get("event") == "request"]


async def test_every_request_has_one_json_access_line_with_its_ids(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str
) -> None:
    session = await scripted_session(client, alice, {"text": "hi"})
    with captured_logs(level=logging.INFO) as logs:
        response = await client.get(f"/sessions/{session['id']}", headers=alice)
    assert response.status_code == 200
    request_id = response.headers["x-request-id"]
    lines = _access_lines(logs.records())
    assert len(lines) == 1
    line = lines[0]
    assert line["request_id"] == request_id
    assert line["tenant_id"] == tenant
    assert (line["method"], line["route"], line["status"]) == ("GET", "/sessions/{session_id}", 200)
    assert line["level"] == "info"
    assert str(line["timestamp"]).endswith("Z")
    assert isinstance(line["duration_ms"], float)


async def test_a_valid_request_id_is_echoed_and_a_bad_one_replaced(client: httpx.AsyncClient) -> None:
    echoed = await client.get("/healthz", headers={"X-Request-ID": "req-42.abc:7"})
    assert echoed.headers["x-request-id"] == "req-42.abc:7"
    for bad in (b"x" * 200, b"has space", "naïve".encode()):
        response = await client.get("/healthz", headers={"X-Request-ID": bad})
        assert response.headers["x-request-id"].encode() != bad
        assert len(response.headers["x-request-id"]) == 32
    generated = (await client.get("/healthz")).headers["x-request-id"]
    assert generated != (await client.get("/healthz")).headers["x-request-id"]


def test_request_ids_from_headers_are_bounded_and_printable() -> None:
    assert request_id_from([(b"x-request-id", b"abc")]) == "abc"
    assert request_id_from([(b"x-request-id", b"a\x00b")]) != "a\x00b"
    assert request_id_from([(b"x-request-id", b"")]) != ""
    assert len(request_id_from([])) == 32


async def test_an_unmatched_path_and_the_query_string_stay_out_of_the_route(client: httpx.AsyncClient) -> None:
    with captured_logs(level=logging.INFO) as logs:
        await client.get("/no/such/path?access_token=abc")
    line = _access_lines(logs.records())[0]
    assert (line["route"], line["status"]) == ("unmatched", 404)
    assert "access_token" not in logs.text()


async def test_a_failed_turn_is_logged_with_its_code_and_ids(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, alice: dict[str, str], tenant: str
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    settings = make_settings(database_url, tmp_path, anthropic=AnthropicSettings(api_key=None))
    config = {"model": {"provider": "anthropic", "name": "claude-x"}, "system_prompt": "x"}
    async with running_app(settings) as (_, client):
        session = await create_session(client, alice, (await create_agent(client, alice, config))["id"])
        with captured_logs(level=logging.INFO) as logs:
            frames = await read_turn(
                client, "POST", f"/sessions/{session['id']}/turns", json={"input": "x"}, headers=alice
            )
            async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
                while not [r for r in logs.records() if r.get("event") == "turn failed"]:
                    await asyncio.sleep(0.01)
    ended = frames[-1].data
    assert ended["error"]["code"] == "provider_not_configured"
    failed = [r for r in logs.records() if r.get("event") == "turn failed"]
    assert len(failed) == 1
    assert failed[0]["error_code"] == "provider_not_configured"
    assert failed[0]["level"] == "warning"
    assert failed[0]["turn_id"] == ended["turn_id"]
    assert failed[0]["session_id"] == session["id"]
    assert failed[0]["tenant_id"] == tenant
    request_ids = {r["request_id"] for r in _access_lines(logs.records())}
    assert failed[0]["request_id"] in request_ids


async def test_an_unexpected_error_is_named_in_the_log_with_the_request_id_never_in_the_turn(
    client: httpx.AsyncClient, alice: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*_: object) -> dict[str, object]:
        raise RuntimeError("statement text with detail-4711")

    session = await open_session(client, alice, gated_config())
    monkeypatch.setattr(TurnStore, "pending_approvals", broken)
    with captured_logs(level=logging.INFO) as logs:
        frames = await read_turn(
            client, "POST", f"/sessions/{session['id']}/turns", json={"input": "x"},
            headers={**alice, "X-Request-ID": "req-unexpected-1"},
        )  # fmt: skip
    ended = frames[-1].data
    assert (ended["status"], ended["error"]) == (
        "failed",
        {"code": "internal_error", "message": INTERNAL_ERROR_MESSAGE},
    )
    shown = json.dumps([f.data for f in frames])
    assert "RuntimeError" not in shown
    assert "detail-4711" not in shown
    [line] = [r for r in logs.records() if "RuntimeError: statement text with detail-4711" in r.get("exception", "")]
    assert (line["request_id"], line["turn_id"]) == ("req-unexpected-1", ended["turn_id"])


async def test_no_log_line_ever_carries_a_token_key_or_secret(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tenant: str, auth_headers: TokenFactory
) -> None:
    """Turn scenarios (completed, tool calls, approval, provider failure, bad token) logged at DEBUG."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    anthropic = AnthropicSettings(api_key=ANTHROPIC_KEY, base_url="http://127.0.0.1:9", max_retries=0)
    hooks = WebhookSettings(allowed_hosts=["127.0.0.1"], poll_seconds=0.05, retry_first_seconds=0.05)
    settings = make_settings(database_url, tmp_path, anthropic=anthropic, webhooks=hooks)
    alice = auth_headers(tenant, "alice", roles=["admin"])
    token = alice["Authorization"].removeprefix("Bearer ")
    with captured_logs(level=logging.DEBUG) as logs:
        async with running_app(settings) as (_, client):
            hook_url = f"http://127.0.0.1:9/hook?token={URL_TOKEN}"
            hook = await client.post("/webhooks", json={"url": hook_url, "events": ["turn.ended"]}, headers=alice)
            webhook_secret = hook.json()["secret"]
            calc = {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]}
            session = await scripted_session(client, alice, calc, {"text": "42"})
            await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "x"}, headers=alice)
            config = {"model": {"provider": "anthropic", "name": "claude-x"}, "system_prompt": "x"}
            agent = await create_agent(client, alice, config)
            remote = await create_session(client, alice, agent["id"])
            frames = await read_turn(
                client, "POST", f"/sessions/{remote['id']}/turns", json={"input": "x"}, headers=alice
            )
            assert frames[-1].data["status"] == "failed"
            forged = {"Authorization": f"Bearer {token[:-4]}AAAA"}
            assert (await client.get("/sessions", headers=forged)).status_code == 401
            await client.get(f"/turns/{frames[-1].data['turn_id']}/events?access_token={token}")
            hook_id = hook.json()["id"]
            async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
                while not any(d["attempts"] >= 2 for d in await _deliveries(client, alice, hook_id)):
                    await asyncio.sleep(0.05)
    text = logs.text()
    assert _access_lines(logs.records())
    for secret in (token, token.split(".")[2], ANTHROPIC_KEY, TEST_SECRET, webhook_secret, URL_TOKEN):
        assert secret not in text


async def _deliveries(client: httpx.AsyncClient, headers: dict[str, str], hook_id: str) -> list[dict[str, Any]]:
    return list((await client.get(f"/webhooks/{hook_id}/deliveries", headers=headers)).json()["items"])


async def test_console_format_is_for_humans(database_url: str, tmp_path: Path) -> None:
    settings = make_settings(database_url, tmp_path, observability=ObservabilitySettings(log_format="console"))
    with captured_logs("console", level=logging.INFO) as logs:
        async with running_app(settings) as (_, client):
            await client.get("/healthz")
    line = next(line for line in logs.lines if "request" in line and "/healthz" in line)
    with pytest.raises(json.JSONDecodeError):
        json.loads(line)
    assert "route=/healthz" in line
