"""The request owns the transaction, and it is committed before the client hears about success."""

from __future__ import annotations

import json
import uuid
from typing import Any

from fastapi import FastAPI
from sqlalchemy import select

from app.core.db import create_engine
from app.models import Agent
from tests.factories import scripted_config


def _scope(method: str, path: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    raw += [
        (b"host", b"testserver"),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": raw,
        "client": ("127.0.0.1", 40000),
        "server": ("testserver", 80),
    }


async def test_created_agent_is_committed_before_the_response_is_sent(
    app: FastAPI, alice: dict[str, str], database_url: str
) -> None:
    body = json.dumps({"name": "durable", "config": scripted_config()}).encode()
    engine = create_engine(database_url)
    visible_when_sent: list[bool] = []
    status: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
        if message["type"] == "http.response.body" and not message.get("more_body"):
            agent_id = uuid.UUID(json.loads(message["body"])["id"])
            async with engine.connect() as conn:  # what another client would see right now
                found = await conn.execute(select(Agent.id).where(Agent.id == agent_id))
                visible_when_sent.append(found.first() is not None)

    try:
        await app(_scope("POST", "/agents", alice, body), receive, send)
    finally:
        await engine.dispose()
    assert status == [201]
    assert visible_when_sent == [True]
