"""Accept: application/json, provider set-up errors, and problem+json for every refused turn request."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import httpx
import pytest

from app.settings import AnthropicSettings
from tests.conftest import TokenFactory, make_settings, running_app
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import read_turn
from tests.turns.support import POLL_TIMEOUT_SECONDS, scripted_session

PROBLEM = "application/problem+json"
JSON = {"Accept": "application/json"}


def _assert_problem(response: httpx.Response, status: int) -> dict[str, object]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body = dict(response.json())
    assert body["status"] == status
    assert {"type", "title", "detail"} <= set(body)
    return body


async def test_accept_json_returns_the_finished_turn(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    calc = {"tool_calls": [{"name": "calculator", "arguments": {"expression": "2+2"}}]}
    session = await scripted_session(client, alice, calc, {"text": "four it is"})
    response = await client.post(f"/sessions/{session['id']}/turns", json={"input": "2+2?"}, headers={**alice, **JSON})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    turn = response.json()
    assert turn["status"] == "completed"
    assert turn["final_output"] == "four it is"
    assert turn["loop_count"] == 2
    assert turn["usage"]["output_tokens"] == 1 + 3
    assert turn["usage"]["input_tokens"] > 0
    assert turn["session_id"] == session["id"]
    assert turn["error"] is None
    assert turn["ended_at"] is not None
    assert (await client.get(f"/turns/{turn['id']}", headers=alice)).json() == turn


async def test_accept_json_answers_a_loop_limited_turn_with_its_partial_answer(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    endless = {"text": "partial", "tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}
    session = await scripted_session(client, alice, endless, limits={"max_loops": 2})
    response = await client.post(f"/sessions/{session['id']}/turns", json={"input": "go"}, headers={**alice, **JSON})
    turn = response.json()
    assert (turn["status"], turn["final_output"], turn["loop_count"]) == ("loop_limit", "partial", 2)


async def test_event_stream_is_the_default_and_wins_when_both_are_accepted(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session = await scripted_session(client, alice, {"text": "hi"})
    headers = {**alice, "Accept": "text/event-stream, application/json"}
    frames = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "x"}, headers=headers)
    assert frames[-1].event == "turn.ended"


async def test_anthropic_turn_without_a_key_fails_at_once_with_provider_not_configured(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, alice: dict[str, str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    settings = make_settings(database_url, tmp_path, anthropic=AnthropicSettings(api_key=None))
    config = {"model": {"provider": "anthropic", "name": "claude-sonnet-4-5"}, "system_prompt": "x"}
    async with running_app(settings) as (_, client):
        agent = await create_agent(client, alice, config)
        session = await create_session(client, alice, agent["id"])
        async with asyncio.timeout(POLL_TIMEOUT_SECONDS):
            frames = await read_turn(
                client, "POST", f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers=alice
            )
        ended = frames[-1]
        assert ended.event == "turn.ended"
        assert ended.data["status"] == "failed"
        assert ended.data["error"]["code"] == "provider_not_configured"
        assert ended.data["final_output"] is None
        assert "message.delta" not in [f.event for f in frames]
        turn = (await client.get(f"/turns/{ended.data['turn_id']}", headers=alice)).json()
        assert turn["status"] == "failed"
        assert turn["error"]["code"] == "provider_not_configured"


async def test_turn_on_a_closed_session_is_409_problem(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    session = await scripted_session(client, alice)
    assert (await client.delete(f"/sessions/{session['id']}", headers=alice)).status_code == 204
    for accept in ("text/event-stream", "application/json"):
        response = await client.post(
            f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers={**alice, "Accept": accept}
        )
        assert "closed" in str(_assert_problem(response, 409)["detail"])
    assert (await client.get(f"/sessions/{session['id']}/turns", headers=alice)).json()["items"] == []


async def test_turn_on_an_unknown_session_is_404_problem(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    _assert_problem(await client.post(f"/sessions/{uuid.uuid4()}/turns", json={"input": "hi"}, headers=alice), 404)


async def test_turn_on_another_users_session_is_404_problem(
    client: httpx.AsyncClient, alice: dict[str, str], tenant: str, auth_headers: TokenFactory
) -> None:
    session = await scripted_session(client, alice)
    bob = auth_headers(tenant, "bob")
    _assert_problem(await client.post(f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers=bob), 404)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"input": ""},
        {"input": "hi", "extra": 1},
        {"input": "hi", "limits": {"max_loops": 0}},
        {"input": "hi", "limits": {"max_output_tokens": -1}},
        {"input": "hi", "limits": {"bogus": 1}},
    ],
)
async def test_invalid_turn_body_is_422_problem(
    client: httpx.AsyncClient, alice: dict[str, str], body: dict[str, object]
) -> None:
    session = await scripted_session(client, alice)
    _assert_problem(await client.post(f"/sessions/{session['id']}/turns", json=body, headers=alice), 422)


async def test_turn_requests_without_a_token_are_401_problem(client: httpx.AsyncClient) -> None:
    some = uuid.uuid4()
    _assert_problem(await client.post(f"/sessions/{some}/turns", json={"input": "hi"}), 401)
    _assert_problem(await client.get(f"/turns/{some}"), 401)
    _assert_problem(await client.get(f"/turns/{some}/events"), 401)
    _assert_problem(await client.post(f"/turns/{some}/cancel"), 401)


async def test_unknown_turns_are_404_problem(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    some = uuid.uuid4()
    _assert_problem(await client.get(f"/turns/{some}", headers=alice), 404)
    _assert_problem(await client.get(f"/turns/{some}/events", headers=alice), 404)
    _assert_problem(await client.post(f"/turns/{some}/cancel", headers=alice), 404)


async def test_bad_replay_cursor_is_422_problem(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    session = await scripted_session(client, alice)
    frames = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "x"}, headers=alice)
    url = f"/turns/{frames[0].data['turn_id']}/events"
    _assert_problem(await client.get(url, params={"after": -1}, headers=alice), 422)
    _assert_problem(await client.get(url, headers={**alice, "Last-Event-ID": "abc"}), 422)


async def test_a_turn_of_another_tenant_is_404_problem(
    client: httpx.AsyncClient, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    agent = await create_agent(client, alice, scripted_config())
    session = await create_session(client, alice, agent["id"])
    frames = await read_turn(client, "POST", f"/sessions/{session['id']}/turns", json={"input": "x"}, headers=alice)
    turn_id = frames[0].data["turn_id"]
    mallory = auth_headers(f"tenant-{uuid.uuid4().hex[:8]}", "alice", ["admin"])
    _assert_problem(await client.get(f"/turns/{turn_id}", headers=mallory), 404)
    _assert_problem(await client.get(f"/turns/{turn_id}/events", headers=mallory), 404)
    _assert_problem(await client.post(f"/turns/{turn_id}/cancel", headers=mallory), 404)


async def test_malformed_json_body_and_wrong_method_are_problems(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    session = await scripted_session(client, alice)
    url = f"/sessions/{session['id']}/turns"
    malformed = await client.post(url, content=b"{not json", headers={**alice, "Content-Type": "application/json"})
    _assert_problem(malformed, 422)
    _assert_problem(await client.get(f"/turns/{uuid.uuid4()}/cancel", headers=alice), 405)
    _assert_problem(await client.post("/turns/not-a-uuid/cancel", headers=alice), 422)
