"""Receipts name the policy set that judged them: sha256 of its canonical JSON."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import httpx
import pytest

from tests.approvals.helpers import run_turn, turn_id
from tests.conftest import TokenFactory
from tests.factories import scripted_config

AGENT_RULE = {"id": "agent-gate", "point": "tool", "tool": "calculator", "verdict": "deny", "reason": "r"}
TENANT_RULE = {"id": "tenant-quiet", "point": "tool", "tool": "current_time", "verdict": "deny"}
ECHO_TURN = ({"tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]}, {"text": "ok"})


@pytest.fixture
def root(tenant: str, auth_headers: TokenFactory) -> dict[str, str]:
    return auth_headers(tenant, "root", roles=["admin"])


def expected_hash(tenant: list[dict[str, Any]], agent: list[dict[str, Any]], blacklist: list[str]) -> str:
    document = {"tenant": tenant, "agent": agent, "tool_blacklist": blacklist}
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


async def turn_hashes(client: httpx.AsyncClient, headers: dict[str, str], **config: Any) -> set[str]:
    _, frames = await run_turn(client, headers, scripted_config(*ECHO_TURN, **config))
    response = await client.get(f"/turns/{turn_id(frames)}/decisions", headers=headers)
    assert response.status_code == 200, response.text
    items = response.json()["items"]
    assert {i["point"] for i in items} == {"pre_llm", "tool"}
    emitted = {f.data["policy_hash"] for f in frames if f.event == "policy.decision"}
    stored = {i["policy_hash"] for i in items}
    assert emitted == stored
    return stored


async def test_receipts_carry_the_hash_of_the_whole_policy_set(
    client: httpx.AsyncClient, alice: dict[str, str], root: dict[str, str]
) -> None:
    put = await client.put("/policies", json={"policies": [TENANT_RULE]}, headers=root)
    assert put.status_code == 200, put.text
    hashes = await turn_hashes(client, alice, policies=[AGENT_RULE], tool_blacklist=["nothing_*"])
    assert hashes == {expected_hash([TENANT_RULE], [AGENT_RULE], ["nothing_*"])}


async def test_changing_tenant_policies_changes_the_hash_and_same_policies_keep_it(
    client: httpx.AsyncClient, alice: dict[str, str], root: dict[str, str]
) -> None:
    (before,) = await turn_hashes(client, alice, policies=[AGENT_RULE])
    assert before == expected_hash([], [AGENT_RULE], [])
    await client.put("/policies", json={"policies": [TENANT_RULE]}, headers=root)
    (changed,) = await turn_hashes(client, alice, policies=[AGENT_RULE])
    assert changed != before
    again = await client.put("/policies", json={"policies": [TENANT_RULE]}, headers=root)
    assert again.json()["version"] == 2
    (same,) = await turn_hashes(client, alice, policies=[AGENT_RULE])
    assert same == changed


async def test_agent_rules_and_blacklist_are_part_of_the_hash(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    (plain,) = await turn_hashes(client, alice)
    (with_rule,) = await turn_hashes(client, alice, policies=[AGENT_RULE])
    (with_blacklist,) = await turn_hashes(client, alice, tool_blacklist=["nothing_*"])
    assert len({plain, with_rule, with_blacklist}) == 3


async def test_decisions_of_a_turn_are_private_to_its_owner(
    client: httpx.AsyncClient, tenant: str, alice: dict[str, str], auth_headers: TokenFactory
) -> None:
    _, frames = await run_turn(client, alice, scripted_config(*ECHO_TURN))
    bob = auth_headers(tenant, "bob")
    assert (await client.get(f"/turns/{turn_id(frames)}/decisions", headers=bob)).status_code == 404
