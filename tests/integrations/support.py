"""Helpers for the end-to-end tests of the Context Engine and MCP gateway integrations."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi import FastAPI
from jose import jwt
from sqlalchemy import text

from app.providers.base import ModelRequest, ProviderEvent
from app.providers.registry import ProviderRegistry
from app.providers.scripted import ScriptedProvider
from tests.factories import create_agent, create_session, scripted_config
from tests.sse import Frame, parse

CE_URL = "http://ce.test"
SERVICE = "/contextengine.v1.ContextEngine"
ISSUER = "agent-runtime"
TURN_CLAIMS = {"iss", "aud", "sub", "act", "tenant_id", "agent_id", "session_id", "turn_id", "iat", "exp", "jti"}


class RecordingProvider:
    """The scripted provider, keeping every request so tests can see exactly what the model was given."""

    def __init__(self) -> None:
        self.inner = ScriptedProvider()
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        self.requests.append(request)
        async for item in self.inner.stream(request):
            yield item


def record_model_calls(app: FastAPI) -> RecordingProvider:
    recorder = RecordingProvider()
    app.state.container.turns.providers = ProviderRegistry({"scripted": recorder})
    return recorder


@dataclass
class TurnRun:
    """A finished turn as its SSE stream delivered it: raw text and parsed frames."""

    raw: str
    frames: list[Frame]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def turn_id(self) -> str:
        return str(self.frames[0].data["turn_id"])

    @property
    def ended(self) -> dict[str, Any]:
        assert self.frames[-1].event == "turn.ended"
        return self.frames[-1].data

    def of(self, event: str) -> list[dict[str, Any]]:
        return [f.data for f in self.frames if f.event == event]


async def stream_turn(client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> TurnRun:
    response = await client.request(method, url, **kwargs)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return TurnRun(response.text, parse(response.text))


async def new_session(
    client: httpx.AsyncClient, headers: dict[str, str], *steps: dict[str, Any], **config: Any
) -> dict[str, Any]:
    agent = await create_agent(client, headers, scripted_config(*steps, **config))
    return await create_session(client, headers, agent["id"])


async def run_turn(
    client: httpx.AsyncClient, headers: dict[str, str], session: dict[str, Any], text_input: str
) -> TurnRun:
    return await stream_turn(
        client, "POST", f"/sessions/{session['id']}/turns", json={"input": text_input}, headers=headers
    )


async def verify_token(client: httpx.AsyncClient, token: str, audience: str) -> dict[str, Any]:
    """Verify the way a peer does: fetch our JWKS, pick the key by `kid`, check signature, aud and iss."""
    jwks = (await client.get("/.well-known/jwks.json")).json()
    kid = jwt.get_unverified_header(token)["kid"]
    [key] = [k for k in jwks["keys"] if k["kid"] == kid]
    claims: dict[str, Any] = jwt.decode(token, key, algorithms=[key["alg"]], audience=audience, issuer=ISSUER)
    return claims


def bearer(value: str | None) -> str:
    assert value is not None
    assert value.startswith("Bearer "), value
    return value.removeprefix("Bearer ")


def body(request: httpx.Request) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(request.content)
    return data


async def stored_text(app: FastAPI, session_id: str) -> str:
    """Everything the database holds about a session's turns, as one text to search."""
    queries = [
        "SELECT data FROM turn_events WHERE turn_id IN (SELECT id FROM turns WHERE session_id = :s)",
        "SELECT content || coalesce(tool_calls::text, '') FROM messages WHERE session_id = :s",
        "SELECT kind || detail::text FROM audit_records WHERE turn_id IN (SELECT id FROM turns WHERE session_id = :s)",
        "SELECT result || arguments::text FROM tool_executions WHERE session_id = :s",
        "SELECT coalesce(error::text, '') || coalesce(final_output, '') FROM turns WHERE session_id = :s",
        "SELECT arguments::text || coalesce(reason, '') || coalesce(decision_reason, '') FROM approvals"
        " WHERE session_id = :s",
        "SELECT snapshot::text || coalesce(metadata::text, '') FROM sessions WHERE id = :s",
    ]
    parts: list[str] = []
    async with app.state.container.engine.connect() as conn:
        for query in queries:
            rows = await conn.execute(text(query), {"s": uuid.UUID(session_id)})
            parts += [str(row[0]) for row in rows]
    return "\n".join(parts)


async def audit_records(app: FastAPI, turn_id: str) -> list[tuple[str, dict[str, Any]]]:
    async with app.state.container.engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT kind, detail FROM audit_records WHERE turn_id = :t ORDER BY created_at"),
            {"t": uuid.UUID(turn_id)},
        )
        return [(row.kind, row.detail) for row in rows]


async def ledger_keys(app: FastAPI, session_id: str) -> list[str]:
    async with app.state.container.engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT idempotency_key FROM tool_executions WHERE session_id = :s ORDER BY created_at"),
            {"s": uuid.UUID(session_id)},
        )
        return [row[0] for row in rows]
