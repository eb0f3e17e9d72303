"""`PATCH /agents/{id}`: `config` is a JSON Merge Patch (RFC 7396) on the current configuration."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.core.merge_patch import merge_patch
from tests.factories import create_agent, scripted_config

POLICY = {"id": "gate", "point": "tool", "tool": "calculator", "verdict": "requires_approval", "reason": "human"}


@pytest.mark.parametrize(
    ("target", "patch", "result"),
    [  # the examples of RFC 7396 appendix A
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": "foo"}, None, None),
        ({"a": "foo"}, "bar", "bar"),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_merge_patch_follows_rfc_7396(target: Any, patch: Any, result: Any) -> None:
    assert merge_patch(target, patch) == result


async def _patch(
    client: httpx.AsyncClient, headers: dict[str, str], agent_id: str, body: dict[str, Any]
) -> httpx.Response:
    return await client.patch(f"/agents/{agent_id}", json=body, headers=headers)


async def test_patching_one_field_keeps_tools_and_policies(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice, scripted_config(policies=[POLICY]))
    response = await _patch(client, alice, agent["id"], {"config": {"system_prompt": "Be brief."}})
    assert response.status_code == 200, response.text
    patched = response.json()
    assert patched["version"] == 2
    assert patched["config"]["system_prompt"] == "Be brief."
    assert patched["config"]["policies"] == [POLICY]
    assert patched["config"]["tools"] == agent["config"]["tools"]
    assert patched["config"]["model"] == agent["config"]["model"]


async def test_nested_members_merge_and_null_removes(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice, scripted_config(policies=[POLICY]))
    response = await _patch(client, alice, agent["id"], {"config": {"limits": {"max_loops": 3}, "policies": None}})
    assert response.status_code == 200, response.text
    config = response.json()["config"]
    assert config["limits"] == {"max_loops": 3}  # unset limits are not stored: defaults and ceilings apply per turn
    assert config["policies"] == []


async def test_the_readme_patch_keeps_the_policy(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice, scripted_config(policies=[POLICY]))
    readme = {"config": {"model": {"provider": "scripted", "script": [{"text": "Version two says hi."}]}}}
    response = await _patch(client, alice, agent["id"], readme)
    assert response.status_code == 200, response.text
    assert response.json()["config"]["policies"] == [POLICY]
    assert response.json()["config"]["model"]["script"] == [{"text": "Version two says hi."}]


async def test_a_patch_that_changes_nothing_adds_no_version(client: httpx.AsyncClient, alice: dict[str, str]) -> None:
    agent = await create_agent(client, alice)
    response = await _patch(client, alice, agent["id"], {"config": {"system_prompt": agent["config"]["system_prompt"]}})
    assert response.status_code == 200, response.text
    assert response.json()["version"] == 1


async def test_a_patch_that_makes_the_config_invalid_is_422_and_changes_nothing(
    client: httpx.AsyncClient, alice: dict[str, str]
) -> None:
    agent = await create_agent(client, alice)
    response = await _patch(client, alice, agent["id"], {"config": {"limits": {"max_loops": 0}, "model": None}})
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    locations = {tuple(e["loc"]) for e in response.json()["errors"]}
    assert ("body", "config", "limits", "max_loops") in locations
    assert ("body", "config", "model") in locations
    current = (await client.get(f"/agents/{agent['id']}", headers=alice)).json()
    assert current["version"] == 1
    assert current["config"] == agent["config"]
