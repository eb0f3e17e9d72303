"""Builders of the autonomous turn tests: scripted plans and steps, a turn over HTTP, its events by type."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.factories import create_agent, create_session, scripted_config
from tests.sse import Frame, read_turn

AUTONOMY = {"enabled": True, "max_steps": 5}


def plan(*titles: str) -> dict[str, Any]:
    return {"text": json.dumps({"todos": [{"title": t} for t in titles]})}


def echo(text: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "echo", "arguments": {"text": text}}]}


async def autonomous_turn(
    client: httpx.AsyncClient, headers: dict[str, str], *steps: dict[str, Any], **body: Any
) -> list[Frame]:
    """One autonomous turn of a new agent whose scripted model plays `steps`; `body` adds to the turn request."""
    agent = await create_agent(client, headers, scripted_config(*steps, autonomy=AUTONOMY))
    session = await create_session(client, headers, agent["id"])
    url = f"/sessions/{session['id']}/turns"
    return await read_turn(client, "POST", url, json={"input": "do it", "mode": "autonomous", **body}, headers=headers)


def of(frames: list[Frame], event: str) -> list[dict[str, Any]]:
    return [f.data for f in frames if f.event == event]
