"""Agents above the tenant's ceilings are refused; lowered ceilings apply to turns at run time."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import create_agent, create_session, scripted_config
from tests.sse import read_turn
from tests.usage.conftest import Api
from tests.usage.support import problem, put_limits

ENDLESS = {"tool_calls": [{"name": "echo", "arguments": {"text": "again"}}]}


@pytest.mark.parametrize(
    "limits",
    [
        {"max_loops": 4},
        {"max_output_tokens": 501},
        {"max_total_tokens": 2001},
        {"max_loops": 9, "max_total_tokens": 9999},
    ],
)
async def test_creating_an_agent_above_a_ceiling_is_refused(
    api: Api, admin: dict[str, str], alice: dict[str, str], limits: dict[str, Any]
) -> None:
    await put_limits(api.client, admin, max_loops=3, max_output_tokens=500, max_total_tokens=2000)
    body = {"name": "greedy", "config": scripted_config(limits=limits)}
    refused = problem(await api.client.post("/agents", json=body, headers=alice), 422, "limit_exceeds_tenant_ceiling")
    assert {tuple(e["loc"]) for e in refused["errors"]} == {("body", "config", "limits", f) for f in limits}
    assert (await api.client.get("/agents", headers=alice)).json()["items"] == []


async def test_limits_at_the_ceiling_or_unset_are_accepted(
    api: Api, admin: dict[str, str], alice: dict[str, str]
) -> None:
    await put_limits(api.client, admin, max_loops=3, max_output_tokens=500)
    await create_agent(api.client, alice, scripted_config(limits={"max_loops": 3, "max_output_tokens": 500}))
    await create_agent(api.client, alice, scripted_config())


async def test_patching_an_agent_above_a_ceiling_is_refused_and_adds_no_version(
    api: Api, admin: dict[str, str], alice: dict[str, str]
) -> None:
    await put_limits(api.client, admin, max_output_tokens=500)
    agent = await create_agent(api.client, alice, scripted_config(limits={"max_output_tokens": 100}))
    patch = {"config": scripted_config(limits={"max_output_tokens": 800})}
    problem(
        await api.client.patch(f"/agents/{agent['id']}", json=patch, headers=alice), 422, "limit_exceeds_tenant_ceiling"
    )
    current = (await api.client.get(f"/agents/{agent['id']}", headers=alice)).json()
    assert (current["version"], current["config"]["limits"]) == (1, {"max_output_tokens": 100})


async def test_a_lowered_ceiling_applies_to_an_existing_session_at_run_time(
    api: Api, admin: dict[str, str], alice: dict[str, str]
) -> None:
    agent = await create_agent(api.client, alice, scripted_config(ENDLESS))
    session = await create_session(api.client, alice, agent["id"])
    await put_limits(api.client, admin, max_loops=2)
    frames = await read_turn(
        api.client, "POST", f"/sessions/{session['id']}/turns", json={"input": "go"}, headers=alice
    )
    assert frames[-1].data["status"] == "loop_limit"
    assert frames[-1].data["loop_count"] == 2


async def test_a_turn_request_cannot_raise_a_limit_above_the_ceiling(
    api: Api, admin: dict[str, str], alice: dict[str, str]
) -> None:
    await put_limits(api.client, admin, max_loops=2)
    agent = await create_agent(api.client, alice, scripted_config(ENDLESS, limits={"max_loops": 2}))
    session = await create_session(api.client, alice, agent["id"])
    body = {"input": "go", "limits": {"max_loops": 50}}
    frames = await read_turn(api.client, "POST", f"/sessions/{session['id']}/turns", json=body, headers=alice)
    turn = (await api.client.get(f"/turns/{frames[0].data['turn_id']}", headers=alice)).json()
    assert (turn["status"], turn["max_loops"]) == ("loop_limit", 2)
