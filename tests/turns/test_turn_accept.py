"""`Accept` on the streaming routes: declared in OpenAPI, negotiated, and 406 before anything starts."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.approvals.helpers import gated_config
from tests.factories import create_agent, create_session
from tests.turns.support import scripted_session

PROBLEM = "application/problem+json"


async def _turns(client: httpx.AsyncClient, headers: dict[str, str], session_id: str) -> list[dict[str, Any]]:
    response = await client.get(f"/sessions/{session_id}/turns", headers=headers)
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


@pytest.mark.parametrize("accept", ["text/html", "text/html, image/*", "application/json;q=0, text/event-stream;q=0"])
async def test_a_turn_for_an_accept_it_cannot_serve_is_406_and_starts_nothing(
    client: httpx.AsyncClient, alice: dict[str, str], accept: str
) -> None:
    session = await scripted_session(client, alice, {"text": "never said"})
    response = await client.post(
        f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers={**alice, "Accept": accept}
    )
    assert response.status_code == 406, response.text
    assert response.headers["content-type"] == PROBLEM
    assert "text/event-stream or application/json" in response.json()["detail"]
    assert await _turns(client, alice, session["id"]) == []


@pytest.mark.parametrize(
    ("accept", "media"),
    [
        ("*/*", "text/event-stream"),
        ("application/*", "application/json"),
        ("text/html, application/json", "application/json"),
    ],
)
async def test_a_turn_answers_the_representation_negotiated(
    client: httpx.AsyncClient, alice: dict[str, str], accept: str, media: str
) -> None:
    session = await scripted_session(client, alice, {"text": "hello there"})
    response = await client.post(
        f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers={**alice, "Accept": accept}
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith(media)


async def test_the_events_route_refuses_json(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    session = await scripted_session(client, alice, {"text": "hello there"})
    turn = (
        await client.post(
            f"/sessions/{session['id']}/turns", json={"input": "hi"}, headers={**alice, "Accept": "application/json"}
        )
    ).json()
    refused = await client.get(f"/turns/{turn['id']}/events", headers={**alice, "Accept": "application/json"})
    assert refused.status_code == 406
    assert refused.headers["content-type"] == PROBLEM
    served = await client.get(f"/turns/{turn['id']}/events", headers={**alice, "Accept": "text/event-stream"})
    assert served.status_code == 200
    assert "event: turn.ended" in served.text


async def test_a_decision_for_an_accept_it_cannot_serve_is_406_and_decides_nothing(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    agent = await create_agent(client, alice, gated_config())
    session = await create_session(client, alice, agent["id"])
    await client.post(
        f"/sessions/{session['id']}/turns", json={"input": "go"}, headers={**alice, "Accept": "application/json"}
    )
    approval = (await client.get(f"/approvals?session_id={session['id']}", headers=alice)).json()["items"][0]
    refused = await client.post(
        f"/approvals/{approval['id']}", json={"decision": "approve"}, headers={**alice, "Accept": "text/html"}
    )
    assert refused.status_code == 406
    assert (await client.get(f"/approvals/{approval['id']}", headers=alice)).json()["status"] == "pending"


def test_streaming_routes_declare_accept(app: FastAPI) -> None:
    paths = app.openapi()["paths"]
    for path, method, offers in [
        ("/sessions/{session_id}/turns", "post", ["text/event-stream", "application/json"]),
        ("/approvals/{approval_id}", "post", ["text/event-stream", "application/json"]),
        ("/turns/{turn_id}/approvals", "post", ["text/event-stream", "application/json"]),
        ("/turns/{turn_id}/events", "get", ["text/event-stream"]),
    ]:
        operation = paths[path][method]
        accept = [p for p in operation["parameters"] if p["name"] == "Accept" and p["in"] == "header"]
        assert accept, path
        assert accept[0]["schema"]["enum"] == offers, path
        assert "406" in operation["responses"], path
