"""Helpers of the usage tests: set the tenant's limits, read a problem."""

from __future__ import annotations

from typing import Any

import httpx


async def put_limits(client: httpx.AsyncClient, admin: dict[str, str], **limits: Any) -> dict[str, Any]:
    response = await client.put("/limits", json=limits, headers=admin)
    assert response.status_code == 200, response.text
    return dict(response.json())


def problem(response: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = dict(response.json())
    if code is not None:
        assert body["code"] == code
        assert body["type"].endswith("/" + code.replace("_", "-"))
    return body
