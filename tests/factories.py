"""Small builders for request bodies used across test modules."""

from __future__ import annotations

from typing import Any

import httpx


def scripted_config(*steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "model": {"provider": "scripted", "script": list(steps) or [{"text": "hello there"}]},
        "system_prompt": "You are a test agent.",
        "tools": ["builtin:calculator", "builtin:echo", "builtin:current_time"],
    }
    config.update(extra)
    return config


async def create_agent(
    client: httpx.AsyncClient, headers: dict[str, str], config: dict[str, Any] | None = None, name: str = "helper"
) -> dict[str, Any]:
    response = await client.post("/agents", json={"name": name, "config": config or scripted_config()}, headers=headers)
    assert response.status_code == 201, response.text
    return dict(response.json())


async def create_session(
    client: httpx.AsyncClient, headers: dict[str, str], agent_id: str, **body: Any
) -> dict[str, Any]:
    response = await client.post("/sessions", json={"agent_id": agent_id, **body}, headers=headers)
    assert response.status_code == 201, response.text
    return dict(response.json())
