"""GET/PUT /policies: admin only, versioned, validated field by field, one set per tenant."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.conftest import TokenFactory

DENY_ECHO = {"id": "no-echo", "point": "tool", "tool": "echo", "verdict": "deny", "reason": "quiet please"}
NO_SECRETS = {"id": "no-secrets", "point": "pre_llm", "input_regex": "(?i)password", "verdict": "deny"}


@pytest.fixture
def root(tenant: str, auth_headers: TokenFactory) -> dict[str, str]:
    return auth_headers(tenant, "root", roles=["admin"])


async def test_a_tenant_without_policies_reads_version_zero(client: httpx.AsyncClient, root: dict[str, str]) -> None:
    response = await client.get("/policies", headers=root)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["version"], body["policies"], body["created_by"]) == (0, [], None)


@pytest.mark.parametrize("method", ["GET", "PUT"])
async def test_policies_need_the_admin_role(client: httpx.AsyncClient, alice: dict[str, str], method: str) -> None:
    response = await client.request(method, "/policies", json={"policies": [DENY_ECHO]}, headers=alice)
    assert response.status_code == 403, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["status"] == 403


async def test_put_adds_a_version_and_get_reads_the_newest(client: httpx.AsyncClient, root: dict[str, str]) -> None:
    first = await client.put("/policies", json={"policies": [DENY_ECHO]}, headers=root)
    assert first.status_code == 200, first.text
    assert first.json()["version"] == 1
    assert first.json()["created_by"] == "root"
    second = await client.put("/policies", json={"policies": [NO_SECRETS, DENY_ECHO]}, headers=root)
    assert second.json()["version"] == 2
    assert second.json()["policy_hash"] != first.json()["policy_hash"]
    current = (await client.get("/policies", headers=root)).json()
    assert current["version"] == 2
    assert [p["id"] for p in current["policies"]] == ["no-secrets", "no-echo"]
    assert current["policies"][1]["reason"] == "quiet please"
    cleared = await client.put("/policies", json={"policies": []}, headers=root)
    assert (cleared.json()["version"], cleared.json()["policies"]) == (3, [])


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        ({"id": "r", "point": "tool", "verdict": "deny"}, "tool"),
        ({"id": "r", "point": "tool", "tool": "echo", "verdict": "maybe"}, "verdict"),
        ({"id": "r", "point": "pre_llm", "verdict": "deny", "tool": "echo", "input_regex": "x"}, "tool"),
        ({"id": "r", "point": "pre_llm", "verdict": "deny", "input_regex": "("}, "input_regex"),
        ({"id": "r", "point": "pre_llm", "verdict": "deny", "max_input_chars": 0}, "max_input_chars"),
        ({"id": "r", "point": "tool", "tool": "echo", "verdict": "deny", "colour": "red"}, "colour"),
    ],
)
async def test_invalid_rules_are_422_naming_the_field(
    client: httpx.AsyncClient, root: dict[str, str], rule: dict[str, Any], field: str
) -> None:
    response = await client.put("/policies", json={"policies": [rule]}, headers=root)
    assert response.status_code == 422, response.text
    locations = [error["loc"] for error in response.json()["errors"]]
    assert any(field in loc for loc in locations), locations
    assert (await client.get("/policies", headers=root)).json()["version"] == 0


async def test_duplicate_rule_ids_are_422(client: httpx.AsyncClient, root: dict[str, str]) -> None:
    response = await client.put("/policies", json={"policies": [DENY_ECHO, DENY_ECHO]}, headers=root)
    assert response.status_code == 422, response.text
    assert "no-echo" in response.text


async def test_each_tenant_reads_its_own_policies(
    client: httpx.AsyncClient, root: dict[str, str], auth_headers: TokenFactory
) -> None:
    assert (await client.put("/policies", json={"policies": [DENY_ECHO]}, headers=root)).status_code == 200
    other = auth_headers(f"tenant-{uuid.uuid4().hex[:8]}", "root", roles=["admin"])
    assert (await client.get("/policies", headers=other)).json()["version"] == 0
    assert (await client.put("/policies", json={"policies": [NO_SECRETS]}, headers=other)).json()["version"] == 1
    mine = (await client.get("/policies", headers=root)).json()
    assert (mine["version"], [p["id"] for p in mine["policies"]]) == (1, ["no-echo"])
    theirs = (await client.get("/policies", headers=other)).json()
    assert [p["id"] for p in theirs["policies"]] == ["no-secrets"]
